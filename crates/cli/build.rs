//! Records the git commit schedlab is built from (`SCHEDLAB_GIT_COMMIT`),
//! for the provenance of every JSON result. Outside a git checkout, or
//! without git, the commit is "unknown"; the build never fails for it.
//!
//! Also tells the tests which outside tools this machine has (`cfg`s
//! `has_rt_app`, `has_qemu`, `has_busybox`, `has_test_kernel`): a test that
//! needs a missing one is `#[ignore]`d with the reason, so `cargo test`
//! counts only what ran; where the tools are (as `.ci/run` installs them
//! before it builds) the same command runs them. Looked up when the build
//! script runs: after installing a tool, `touch crates/cli/build.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    // A build from a source archive may name its commit itself.
    let commit = std::env::var("SCHEDLAB_GIT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "HEAD"]))
        .filter(|c| c.len() >= 7 && c.chars().all(|ch| ch.is_ascii_hexdigit()))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=SCHEDLAB_GIT_COMMIT={commit}");
    println!("cargo:rerun-if-env-changed=SCHEDLAB_GIT_COMMIT");
    // Rebuild when HEAD moves: HEAD itself (a checkout), the branch it names
    // (a commit) and packed-refs (a gc). Paths git gives may be relative to
    // the crate directory; a file that does not exist is not watched (cargo
    // would rerun this script on every build).
    let base = Path::new(env!("CARGO_MANIFEST_DIR"));
    let abs = |p: String| -> PathBuf {
        let p = PathBuf::from(p);
        if p.is_absolute() {
            p
        } else {
            base.join(p)
        }
    };
    let watch = |p: PathBuf| {
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    };
    if let Some(dir) = git(&["rev-parse", "--git-dir"]).map(abs) {
        watch(dir.join("HEAD"));
        if let Some(common) = git(&["rev-parse", "--git-common-dir"]).map(abs) {
            watch(common.join("packed-refs"));
            if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
                watch(common.join(r));
            }
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
    tools();
}

/// `name` is an executable file in a directory of PATH.
fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}

/// The tools the ignorable tests need, as `cfg`s.
fn tools() {
    let file = |var: &str| {
        println!("cargo:rerun-if-env-changed={var}");
        std::env::var_os(var).is_some_and(|p| Path::new(&p).is_file())
    };
    println!("cargo:rerun-if-env-changed=PATH");
    let kernel = file("SCHEDLAB_TEST_KERNEL") && file("SCHEDLAB_TEST_GUEST");
    for (cfg, present) in [
        ("has_rt_app", on_path("rt-app")),
        ("has_qemu", on_path("qemu-system-x86_64")),
        ("has_busybox", Path::new("/bin/busybox").is_file()),
        ("has_test_kernel", kernel),
    ] {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        if present {
            println!("cargo:rustc-cfg={cfg}");
        }
    }
}
