//! Tells the tests, at compile time, whether they run against a real cluster
//! (`BERTH_TEST_KUBECONFIG`): tests that need the stand-in's knobs are then
//! marked ignored — reported as skipped, never passed — through
//! `#[cfg_attr(berth_real_cluster, ignore = "…")]`. The one mechanism for the
//! black-box tests (`tests/api`) and the stand-in's own (`infra/kube-standin`,
//! whose manifest points here).

//!
//! It reruns only when that variable changes (or when it is itself edited,
//! which recompiles it). No `rerun-if-changed=build.rs`: that path is
//! relative to the package, and `infra/kube-standin` has no `build.rs` of
//! its own, so cargo counted the stand-in stale at every invocation and
//! rebuilt it (and all that depends on it) each time.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(berth_real_cluster)");
    println!("cargo::rerun-if-env-changed=BERTH_TEST_KUBECONFIG");
    if std::env::var_os("BERTH_TEST_KUBECONFIG").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=berth_real_cluster");
    }
}
