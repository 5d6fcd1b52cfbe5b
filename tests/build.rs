//! Tells the black-box tests (`tests/api`), at compile time, whether they run against a real
//! cluster (`BERTH_TEST_KUBECONFIG`): tests that need the stand-in's knobs are
//! then marked ignored — reported as skipped, never passed — through
//! `#[cfg_attr(berth_real_cluster, ignore = "…")]`. `tests/build.rs` and
//! `infra/kube-standin/build.rs` say the same, each for its own package (a
//! build script is its package's own).
//!
//! It reruns only when that variable changes (or when it is itself edited,
//! which recompiles it).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(berth_real_cluster)");
    println!("cargo::rerun-if-env-changed=BERTH_TEST_KUBECONFIG");
    if std::env::var_os("BERTH_TEST_KUBECONFIG").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=berth_real_cluster");
    }
}
