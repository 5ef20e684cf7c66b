//! docs/DESIGN.md's source maps, of the library's src/ and the command
//! line's cli/src/, are made from the module docs: every file of them
//! opens with a `//!` doc, whose first sentence (up to its first
//! colon or semicolon, when it has one; the full stop of "et al." or
//! "e.g." ends none) is the file's line in the map, a folder's taken from
//! its `mod.rs`. The test fails when a module has no doc or when a
//! map in DESIGN.md is not the one the docs make (a file added, renamed or
//! gone, a doc changed); `RGRADE_BLESS_DOCS=1 cargo test source_map`
//! writes the maps the docs make into DESIGN.md. A file of more than a
//! thousand lines is one to split, and fails too.

use std::fs;
use std::path::Path;

use crate::util::REPO_ROOT;

/// The source trees DESIGN.md maps, each in its own code block that opens
/// with the tree's name.
const TREES: [&str; 2] = ["src", "cli/src"];
/// Where a summary begins on its line.
const SUMMARY_COLUMN: usize = 24;
/// The longest line of the map.
const WIDTH: usize = 100;
/// The most lines a source file may have.
const MOST_LINES: usize = 1000;

/// The first sentence of the `//!` doc that opens `file`, up to its first
/// colon (links as plain code; see [`sentence_end`]); `None` when the file
/// opens with no doc.
fn summary(file: &Path) -> Option<String> {
    let text = fs::read_to_string(file).ok()?;
    let doc: Vec<&str> = text
        .lines()
        .map_while(|line| line.strip_prefix("//!"))
        .map(str::trim)
        .take_while(|line| !line.is_empty())
        .collect();
    // Intra-doc links read as the code they name.
    let doc = doc.join(" ").replace("[`", "`").replace("`]", "`");
    let sentence = doc[..sentence_end(&doc)]
        .trim_end_matches(['.', ':', ';'])
        .trim();
    (!sentence.is_empty()).then(|| sentence.to_string())
}

/// Abbreviations whose full stop ends no sentence.
const ABBREVIATIONS: [&str; 5] = ["et al.", "e.g.", "i.e.", "cf.", "vs."];

/// Where the first sentence of `doc` ends: at its first colon, semicolon
/// or full stop followed by a space, a full stop that ends an
/// [`ABBREVIATIONS`] entry excepted; the whole of `doc` when none does.
fn sentence_end(doc: &str) -> usize {
    let clause_end = [": ", "; "]
        .iter()
        .filter_map(|e| doc.find(e))
        .min()
        .unwrap_or(doc.len());
    let full_stop = doc.match_indices(". ").map(|(at, _)| at).find(|&at| {
        let before = &doc[..=at];
        !ABBREVIATIONS.iter().any(|abbreviation| {
            before.strip_suffix(abbreviation).is_some_and(|head| {
                head.is_empty() || !head.ends_with(|c: char| c.is_alphanumeric())
            })
        })
    });
    full_stop.map_or(clause_end, |at| at.min(clause_end))
}

/// `name` and its summary at `depth`, the summary wrapped at [`WIDTH`]
/// under its column.
fn map_line(out: &mut String, depth: usize, name: &str, summary: &str) {
    let head = format!("{}{name}", "  ".repeat(depth));
    let mut line = format!("{head:<width$}", width = SUMMARY_COLUMN.max(head.len() + 2));
    let mut fresh = true;
    for word in summary.split(' ') {
        if !fresh && line.len() + 1 + word.len() > WIDTH {
            out.push_str(line.trim_end());
            out.push('\n');
            line = " ".repeat(SUMMARY_COLUMN);
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(word);
        fresh = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

/// The map of directory `dir` (files first, then folders, each sorted by
/// name; a folder's line is its `mod.rs`'s), with the files lacking a doc
/// added to `undocumented`.
fn map_dir(dir: &Path, depth: usize, out: &mut String, undocumented: &mut Vec<String>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .expect("the sources are readable")
        .map(|entry| entry.expect("the sources are readable").path())
        .collect();
    entries.sort_by_key(|path| (path.is_dir(), path.file_name().map(|n| n.to_owned())));
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (documented, shown) = if path.is_dir() {
            (path.join("mod.rs"), format!("{name}/"))
        } else if name.ends_with(".rs") && name != "mod.rs" {
            (path.clone(), name)
        } else {
            continue;
        };
        match summary(&documented) {
            Some(text) => map_line(out, depth, &shown, &text),
            None => undocumented.push(documented.display().to_string()),
        }
        if path.is_dir() {
            map_dir(&path, depth + 1, out, undocumented);
        }
    }
}

#[test]
fn design_source_maps_are_made_from_the_module_docs() {
    let root = Path::new(REPO_ROOT);
    let design_path = root.join("docs/DESIGN.md");
    let mut design = fs::read_to_string(&design_path).unwrap();
    let bless = std::env::var_os("RGRADE_BLESS_DOCS").is_some();
    for tree in TREES {
        let (mut map, mut undocumented) = (String::new(), Vec::new());
        map_dir(&root.join(tree), 1, &mut map, &mut undocumented);
        assert!(
            undocumented.is_empty(),
            "modules with no //! doc: {}",
            undocumented.join(", ")
        );
        let map_start = format!("```text\n{tree}/\n");
        let start = design
            .find(&map_start)
            .unwrap_or_else(|| panic!("DESIGN.md has no source map of {tree}/"))
            + map_start.len();
        let end = start + design[start..].find("```").expect("the map's block ends");
        if bless {
            design.replace_range(start..end, &map);
            continue;
        }
        assert!(
            design[start..end] == map,
            "docs/DESIGN.md's source map of {tree}/ is not the one the module docs make; \
             run `RGRADE_BLESS_DOCS=1 cargo test source_map` and check the diff. The map:\n{map}"
        );
    }
    if bless {
        fs::write(&design_path, design).unwrap();
    }
}

/// Every `.rs` file under `dir`.
fn source_files(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).expect("the sources are readable") {
        let path = entry.expect("the sources are readable").path();
        if path.is_dir() {
            source_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

#[test]
fn no_source_file_is_over_a_thousand_lines() {
    let mut files = Vec::new();
    for tree in TREES {
        source_files(&Path::new(REPO_ROOT).join(tree), &mut files);
    }
    let long: Vec<String> = files
        .iter()
        .map(|file| (file, fs::read_to_string(file).unwrap().lines().count()))
        .filter(|&(_, lines)| lines > MOST_LINES)
        .map(|(file, lines)| format!("{} ({lines} lines)", file.display()))
        .collect();
    assert!(long.is_empty(), "files to split: {}", long.join(", "));
}

#[test]
fn a_summary_is_the_first_sentence_up_to_its_colon_past_abbreviations() {
    let dir = std::env::temp_dir().join(format!("rgrade-map-{}", std::process::id()));
    fs::create_dir_all(&dir).unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        fs::write(&path, text).unwrap();
        summary(&path)
    };
    let colon = file(
        "a.rs",
        "//! Stage 3, judge: each record is\n//! matched. More.\n\nuse x;\n",
    );
    assert_eq!(colon.as_deref(), Some("Stage 3, judge"));
    let sentence = file(
        "b.rs",
        "//! Lines read a second\n//! time. What is decided after.\n",
    );
    assert_eq!(sentence.as_deref(), Some("Lines read a second time"));
    assert_eq!(file("c.rs", "use x;\n//! late\n"), None);
    let link = file("d.rs", "//! Read by [`super::blocks`].\n");
    assert_eq!(link.as_deref(), Some("Read by `super::blocks`"));
    let abbreviations = file(
        "e.rs",
        "//! Inference (Smith et al. 2023), e.g. of means, i.e. theirs.\n//! Not this.\n",
    );
    assert_eq!(
        abbreviations.as_deref(),
        Some("Inference (Smith et al. 2023), e.g. of means, i.e. theirs")
    );
    let not_an_abbreviation = file("f.rs", "//! Cut at the maps. Not the tree.\n");
    assert_eq!(not_an_abbreviation.as_deref(), Some("Cut at the maps"));
    let mut out = String::new();
    map_line(&mut out, 1, "x.rs", &"word ".repeat(30));
    assert!(out.lines().all(|line| line.len() <= WIDTH), "{out}");
    assert!(out
        .lines()
        .nth(1)
        .unwrap()
        .starts_with(&" ".repeat(SUMMARY_COLUMN)));
    fs::remove_dir_all(&dir).unwrap();
}
