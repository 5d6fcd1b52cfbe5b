//! Embeds the built console in the function: every file of
//! `BERTH_CONSOLE_DIR` (by default the repository's `console/dist`, which
//! `scripts/console.sh build` writes and `make package` builds first),
//! written into `$OUT_DIR/console_files.rs` as `include_bytes!` of each
//! path. A build without one embeds nothing: the function then answers
//! `503`, saying so.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-env-changed=BERTH_CONSOLE_DIR");
    let dist = std::env::var_os("BERTH_CONSOLE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../console/dist"));
    // A new build of the console (or its first) builds the function again.
    println!("cargo:rerun-if-changed={}", dist.display());
    let mut files = Vec::new();
    if dist.join("index.html").is_file() {
        walk(&dist, &dist, &mut files);
    }
    files.sort();
    let mut code = String::from("pub static FILES: &[(&str, &[u8])] = &[\n");
    for (relative, absolute) in files {
        writeln!(code, "    ({relative:?}, include_bytes!({absolute:?})),").expect("a String");
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("console_files.rs"), code).expect("writing console_files.rs");
}

/// Every file under `dir`, relative to `root` with `/` separators; dot
/// files (the build script's `.inputs` marker) left out.
fn walk(root: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            walk(root, &path, files);
        } else {
            let relative = path.strip_prefix(root).expect("under the root");
            let relative: Vec<&str> = relative.iter().filter_map(|part| part.to_str()).collect();
            let absolute = path.canonicalize().expect("a file's absolute path");
            files.push((relative.join("/"), absolute.display().to_string()));
        }
    }
}
