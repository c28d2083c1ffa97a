//! Records the git commit schedlab is built from (`SCHEDLAB_GIT_COMMIT`),
//! for the provenance of every JSON result. Outside a git checkout, or
//! without git, the commit is "unknown"; the build never fails for it.

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
}
