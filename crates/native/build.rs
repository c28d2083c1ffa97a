//! Tells the tests whether this machine has rt-app (`cfg` `has_rt_app`):
//! the test that runs the real rt-app is `#[ignore]`d, with the reason,
//! where it is missing, so `cargo test` counts only what ran. Looked up when
//! the build script runs: after installing rt-app,
//! `touch crates/native/build.rs`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PATH");
    println!("cargo::rustc-check-cfg=cfg(has_rt_app)");
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("rt-app").is_file()));
    if found {
        println!("cargo:rustc-cfg=has_rt_app");
    }
}
