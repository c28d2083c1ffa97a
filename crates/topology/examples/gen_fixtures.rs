//! Regenerates the sysfs fixture trees under `crates/topology/fixtures/sysfs`
//! from the presets of the same name:
//!
//! ```sh
//! cargo run -p topology --example gen_fixtures
//! ```
//!
//! The trees are committed; tests only read them. `fixtures/README.md` says
//! how the other fixtures were made.

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sysfs");
    for name in ["xeon-12c24t", "kunpeng920-1s"] {
        let dir = base.join(name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir)?;
        }
        let topo = topology::preset(name)?;
        topology::write_sysfs(&topo, &dir)?;
        println!("wrote {}", dir.display());
    }
    Ok(())
}
