//! Tells the black-box tests, at compile time, whether they run against a
//! real cluster (`BERTH_TEST_KUBECONFIG`): the fault tests, which need the
//! stand-in's knobs, are then marked ignored — reported as skipped, not
//! passed — through `#[cfg_attr(berth_real_cluster, ignore = "…")]`.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(berth_real_cluster)");
    println!("cargo::rerun-if-env-changed=BERTH_TEST_KUBECONFIG");
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var_os("BERTH_TEST_KUBECONFIG").is_some_and(|v| !v.is_empty()) {
        println!("cargo::rustc-cfg=berth_real_cluster");
    }
}
