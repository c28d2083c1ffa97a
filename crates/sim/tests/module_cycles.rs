//! Import cycles between the top-level modules of the sim and lab crates.
//!
//! A module here is a crate's top-level module (`crate::engine`, with every
//! file under `engine/`); module A depends on B when a file of A names
//! `crate::B` (a `use` or a path) outside its tests (`tests.rs` files and
//! what follows a file's `#[cfg(test)]`: a unit test may build the whole
//! simulator). The cycles of that graph (its strongly
//! connected components of more than one module) are what a newcomer
//! untangles before changing one room without the others.
//!
//! There are none: a dependency that closes one fails this test, naming
//! the modules on the cycle. (Checked by planting one: see
//! `a_planted_cycle_is_found`, and a `crate::engine` path added to the code
//! of `pelt.rs` fails `no_import_cycle_between_modules`.)

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Module -> the modules it names, from every `.rs` file under `src`.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files = vec![src.to_path_buf()];
    while let Some(p) = files.pop() {
        if p.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                files.push(e.unwrap().path());
            }
            continue;
        }
        if p.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let rel = p.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        // test code may reach up (a unit test builds the whole simulator):
        // a `tests.rs` module and what follows a file's `#[cfg(test)]`
        // are left out
        if module == "lib" || module == "main" || p.file_name().is_some_and(|f| f == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let deps = g.entry(module.clone()).or_default();
        for line in text.lines() {
            if line.trim() == "#[cfg(test)]" {
                break;
            }
            let code = line.split("//").next().unwrap_or("");
            for name in names_after_crate(code) {
                if name != module {
                    deps.insert(name);
                }
            }
        }
    }
    g
}

/// The modules a line names: `crate::a` and `crate::{a, b::c}`.
fn names_after_crate(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for part in group[..end].split(',') {
                let id: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !id.is_empty() && id.starts_with(|c: char| c.is_ascii_lowercase()) {
                    out.push(id);
                }
            }
        } else {
            let id: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !id.is_empty() && id.starts_with(|c: char| c.is_ascii_lowercase()) {
                out.push(id);
            }
        }
    }
    out
}

/// Every dependency (a -> b) whose ends lie on one cycle (Tarjan's strongly
/// connected components).
fn cycle_edges(g: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<(String, String)> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        comp: BTreeMap<&'a str, usize>,
        n: usize,
        comps: usize,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        t.index.insert(v, t.n);
        t.low.insert(v, t.n);
        t.n += 1;
        t.stack.push(v);
        t.on.insert(v);
        if let Some(ws) = t.g.get(v) {
            for w in ws {
                let w = w.as_str();
                if !t.index.contains_key(w) {
                    visit(t, w);
                    let lw = t.low[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if t.on.contains(w) {
                    let iw = t.index[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if t.low[v] == t.index[v] {
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(w);
                t.comp.insert(w, t.comps);
                if w == v {
                    break;
                }
            }
            t.comps += 1;
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        comp: BTreeMap::new(),
        n: 0,
        comps: 0,
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    let mut out = BTreeSet::new();
    for (a, ws) in g {
        for b in ws {
            if t.comp.contains_key(a.as_str()) && t.comp.get(a.as_str()) == t.comp.get(b.as_str()) {
                out.insert((a.clone(), b.clone()));
            }
        }
    }
    out
}

/// The crates checked, beside this one.
const CRATES: [&str; 2] = ["sim", "lab"];

fn check(krate: &str) -> Result<(), String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("src");
    let edges: Vec<String> = cycle_edges(&graph(&src))
        .into_iter()
        .map(|(a, b)| format!("{a} -> {b}"))
        .collect();
    if edges.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "crates/{krate}/src: an import cycle between modules through {edges:?}: move the shared item to the module that owns it, or below both"
        ))
    }
}

#[test]
fn no_import_cycle_between_modules() {
    for krate in CRATES {
        check(krate).unwrap();
    }
}

/// The check finds a cycle planted in a small tree, and none without it.
#[test]
fn a_planted_cycle_is_found() {
    let dir = std::env::temp_dir().join(format!("schedlab-cycles-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("b")).unwrap();
    std::fs::write(dir.join("lib.rs"), "pub mod a; pub mod b; pub mod c;").unwrap();
    std::fs::write(
        dir.join("a.rs"),
        "use crate::b::X; // crate::c in a comment",
    )
    .unwrap();
    std::fs::write(dir.join("b").join("mod.rs"), "pub struct X; mod d;").unwrap();
    std::fs::write(dir.join("c.rs"), "use crate::{a, b::X};").unwrap();
    assert!(cycle_edges(&graph(&dir)).is_empty());
    // plant b -> c, closing a -> b -> c -> a
    std::fs::write(dir.join("b").join("d.rs"), "fn f() { crate::c::g() }").unwrap();
    let edges = cycle_edges(&graph(&dir));
    let _ = std::fs::remove_dir_all(&dir);
    let names: Vec<String> = edges.iter().map(|(a, b)| format!("{a} -> {b}")).collect();
    assert_eq!(names, ["a -> b", "b -> c", "c -> a", "c -> b"]);
}
