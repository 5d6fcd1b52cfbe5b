//! Integration tests: the real kube client against the stand-in.
//!
//! Set `BERTH_TEST_KUBECONFIG=/path/to/kubeconfig` to run them against a real cluster instead;
//! tests of stand-in-only knobs then skip themselves.

mod binary;
mod common;
mod controllers;
mod crd;
mod crud;
mod faults;
mod kubelet;
mod lifecycle;
mod logs;
mod network_policies;
mod pod_admission;
mod pvc;
mod rbac;
mod state_file;
mod watching;
