//! The documentation's commands and links are checked: every
//! `cargo run --release -- ARGS` command (with its `\` continuations) of a
//! `sh` block in README.md and docs/*.md runs the built binary and must end
//! as the documentation says, and every relative link between the
//! documents (python/README.md, benches/runs/ and the samples' READMEs
//! too) must lead to a file and heading that exist.
//!
//! The documents follow three conventions so that this works:
//! - the commands of one document run in order, in one scratch directory
//!   where `data-samples` links to the shipped samples, so a command can
//!   read what an earlier one of the same document wrote under `out/`;
//! - a command must exit with status 0 unless the comment lines right
//!   above it say `exit status N`;
//! - a placeholder such as `rgrade grade --labels FILE LOGS` is written as
//!   `rgrade ...`, never as `cargo run`, and is skipped; any other
//!   `cargo run` form is an error, so a typo cannot skip a command.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::util::{Run, Workdir, REPO_ROOT};

/// The prefix of a documented command that runs rgrade.
const CARGO_RUN: &str = "cargo run --release -- ";

/// The first command of README.md, exactly as the quick start shows it.
const QUICK_START: &str = "grade --labels data-samples/seed/labels.jsonl -k 3 \
                           data-samples/seed/logs.jsonl";

/// One command of a document.
#[derive(Debug)]
struct DocCommand {
    /// Where it starts, as `file:line`, for messages.
    at: String,
    /// The arguments after `cargo run --release --`.
    args: Vec<String>,
    /// The exit status the document states, 0 if it states none.
    status: i32,
}

/// The text of `rel`, a path from the repository's top.
fn doc_text(rel: &str) -> String {
    fs::read_to_string(Path::new(REPO_ROOT).join(rel))
        .unwrap_or_else(|e| panic!("cannot read {rel}: {e}"))
}

/// `folder`/*.md, as paths from the repository's top, in sorted order; there
/// must be some.
fn markdown_pages(folder: &str) -> Vec<String> {
    let dir = Path::new(REPO_ROOT).join(folder);
    let mut pages: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("a directory entry").file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("{folder}/{name}"))
        .collect();
    pages.sort();
    assert!(!pages.is_empty(), "no {folder}/*.md");
    pages
}

/// docs/*.md, as paths from the repository's top, in sorted order.
fn docs_pages() -> Vec<String> {
    markdown_pages("docs")
}

/// The exit status that comment lines above a command state, if any:
/// `exit status N` anywhere in them.
fn stated_status(comments: &[&str]) -> Option<i32> {
    comments.iter().find_map(|comment| {
        let (_, after) = comment.split_once("exit status ")?;
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        digits.parse().ok()
    })
}

/// The words of a command line as a POSIX shell splits them: whitespace
/// separates, single and double quotes group, and `#` at the start of a
/// word begins a comment.
fn shell_words(line: &str, at: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            None if c == '#' && !in_word => break,
            None => {
                word.push(c);
                in_word = true;
            }
        }
    }
    assert!(quote.is_none(), "{at}: unbalanced quote in {line:?}");
    if in_word {
        words.push(word);
    }
    words
}

/// The `cargo run --release --` commands of the `sh` blocks of `text`
/// (the document `file`).
fn doc_commands(file: &str, text: &str) -> Vec<DocCommand> {
    let mut commands = Vec::new();
    let mut in_sh = false;
    let mut comments: Vec<&str> = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            assert!(
                current.is_none(),
                "{file}:{}: a `\\` continuation runs into the end of its block",
                i + 1
            );
            in_sh = trimmed == "```sh";
            comments.clear();
            continue;
        }
        if !in_sh {
            continue;
        }
        if current.is_none() {
            if trimmed.is_empty() {
                comments.clear();
                continue;
            }
            if trimmed.starts_with('#') {
                comments.push(trimmed);
                continue;
            }
        }
        let (start, mut joined) = current.take().unwrap_or((i + 1, String::new()));
        if let Some(head) = trimmed.strip_suffix('\\') {
            joined.push_str(head);
            joined.push(' ');
            current = Some((start, joined));
            continue;
        }
        joined.push_str(trimmed);
        let at = format!("{file}:{start}");
        if let Some(rest) = joined.strip_prefix(CARGO_RUN) {
            commands.push(DocCommand {
                args: shell_words(rest, &at),
                status: stated_status(&comments).unwrap_or(0),
                at,
            });
        } else {
            assert!(
                !joined.starts_with("cargo run"),
                "{at}: a `cargo run` command not of the form `{CARGO_RUN}ARGS`: {joined}"
            );
        }
        comments.clear();
    }
    commands
}

/// Run the commands of `file` in order, in one fresh scratch directory
/// holding a link to `data-samples`, each checked against the exit status
/// the document states; return every run.
fn run_doc_commands(file: &str, commands: &[DocCommand]) -> Vec<Run> {
    let wd = Workdir::new(&format!("docs-{}", file.replace(['/', '.'], "-")));
    std::os::unix::fs::symlink(
        Path::new(REPO_ROOT).join("data-samples"),
        wd.path("data-samples"),
    )
    .expect("link data-samples into the scratch directory");
    commands
        .iter()
        .map(|command| {
            let args: Vec<&str> = command.args.iter().map(String::as_str).collect();
            let run = wd.rgrade(&args);
            assert_eq!(
                run.status.code(),
                Some(command.status),
                "{}: the documented command should exit with status {}\n{run}",
                command.at,
                command.status
            );
            run
        })
        .collect()
}

/// README.md's commands run and end as it says; the first is the quick
/// start's, and prints the worked example's `recall@3 0.833` and
/// `rr@3 0.667` on the `all` row.
#[test]
fn readme_commands_run_as_documented() {
    let commands = doc_commands("README.md", &doc_text("README.md"));
    assert!(
        commands.len() >= 4,
        "README.md: expected the quick start and an example per subcommand, found {commands:?}"
    );
    assert_eq!(
        commands[0].args.join(" "),
        QUICK_START,
        "{}: the quick start command comes first",
        commands[0].at
    );
    let subcommands: Vec<&str> = commands.iter().map(|c| c.args[0].as_str()).collect();
    for subcommand in ["grade", "compare", "gen"] {
        assert!(
            subcommands.contains(&subcommand),
            "README.md: no example of {subcommand}: {commands:?}"
        );
    }
    let runs = run_doc_commands("README.md", &commands);
    let quick_start = &runs[0];
    let table = quick_start.stdout_table();
    let all = table
        .values()
        .next()
        .and_then(|slices| slices.get("all"))
        .unwrap_or_else(|| panic!("no `all` row\n{quick_start}"));
    assert_eq!(all["recall@3"], "0.833", "recall@3\n{quick_start}");
    assert_eq!(all["rr@3"], "0.667", "rr@3\n{quick_start}");
}

/// The commands of docs/*.md run and end as the pages say, and the
/// abridged output docs/compare.md shows for its compare command is what
/// that command prints.
#[test]
fn docs_commands_run_as_documented() {
    let mut ran = 0;
    for page in docs_pages() {
        let text = doc_text(&page);
        let commands = doc_commands(&page, &text);
        let runs = run_doc_commands(&page, &commands);
        ran += runs.len();
        if page == "docs/compare.md" {
            let (command, run) = commands
                .iter()
                .zip(&runs)
                .rfind(|(c, _)| c.args[0] == "compare")
                .unwrap_or_else(|| panic!("{page}: no compare command"));
            let shown = first_block(&text, "```text")
                .unwrap_or_else(|| panic!("{page}: no text block showing compare's output"));
            for line in shown.lines().filter(|line| line.trim() != "...") {
                assert!(
                    run.stdout.lines().any(|printed| printed == line),
                    "{page} shows {line:?}, which {} does not print\n{run}",
                    command.at
                );
            }
        }
    }
    assert!(ran > 0, "docs/*.md: no command ran");
}

/// The body of the first block of `text` that opens with `fence`.
fn first_block<'t>(text: &'t str, fence: &str) -> Option<&'t str> {
    let start = text.find(&format!("\n{fence}\n"))? + fence.len() + 2;
    let len = text[start..].find("\n```")?;
    Some(&text[start..start + len])
}

/// The anchor GitHub gives a heading: lower case, punctuation dropped,
/// spaces turned into hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of the headings of a Markdown text (outside code blocks),
/// a repeated one numbered as GitHub does (`-1`, `-2`, ...).
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut found = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code || !line.starts_with('#') {
            continue;
        }
        let base = anchor(line.trim_start_matches('#'));
        let n = seen.entry(base.clone()).or_insert(0);
        found.push(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    found
}

/// The targets of the inline links `[text](target)` of a Markdown text,
/// outside code blocks and code spans, with their line numbers.
fn link_targets(text: &str) -> Vec<(usize, String)> {
    let mut targets = Vec::new();
    let mut in_code = false;
    // Whether a code span opened on an earlier line of the paragraph is
    // still open, as in "[`rgrade⏎trend`](trend.md)".
    let mut in_span = false;
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            in_span = false;
            continue;
        }
        if in_code {
            continue;
        }
        if line.trim().is_empty() {
            in_span = false;
        }
        // Code spans hold no links: drop them before looking.
        let parts: Vec<&str> = line.split('`').collect();
        let outside = usize::from(in_span);
        let plain: String = parts
            .iter()
            .enumerate()
            .filter(|(j, _)| j % 2 == outside)
            .map(|(_, part)| *part)
            .collect::<Vec<_>>()
            .join(" ");
        in_span ^= parts.len().is_multiple_of(2);
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            targets.push((i + 1, after[..end].to_string()));
            rest = &after[end..];
        }
    }
    targets
}

/// The READMEs of data-samples/ and of each sample that has one, as paths
/// from the repository's top, in sorted order.
fn sample_readmes() -> Vec<String> {
    let dir = Path::new(REPO_ROOT).join("data-samples");
    let mut pages: Vec<String> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("a data-samples/ entry").file_name())
        .map(|name| format!("data-samples/{}/README.md", name.to_string_lossy()))
        .filter(|page| Path::new(REPO_ROOT).join(page).is_file())
        .collect();
    pages.sort();
    pages.insert(0, "data-samples/README.md".to_string());
    pages
}

/// Every relative link of README.md, python/README.md, docs/*.md, the
/// dated benchmark runs and the samples' READMEs leads to a file that
/// exists and, when it names one, to a heading of that file.
#[test]
fn doc_links_resolve() {
    let mut pages = vec!["README.md".to_string(), "python/README.md".to_string()];
    pages.extend(docs_pages());
    pages.extend(markdown_pages("benches/runs"));
    pages.extend(sample_readmes());
    let root = Path::new(REPO_ROOT);
    let mut checked = 0;
    for page in &pages {
        let text = doc_text(page);
        let dir = Path::new(page).parent().unwrap_or(Path::new(""));
        for (line, target) in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((path, fragment)) => (path, Some(fragment)),
                None => (target.as_str(), None),
            };
            let file: PathBuf = if path.is_empty() {
                root.join(page)
            } else {
                root.join(dir).join(path)
            };
            assert!(
                file.exists(),
                "{page}:{line}: link to {target}: {} does not exist",
                file.display()
            );
            if let Some(fragment) = fragment {
                let heads = anchors(&fs::read_to_string(&file).unwrap_or_else(|e| {
                    panic!("{page}:{line}: cannot read {}: {e}", file.display())
                }));
                assert!(
                    heads.iter().any(|h| h == fragment),
                    "{page}:{line}: link to {target}: no heading #{fragment} in {} (has {heads:?})",
                    file.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 0, "no relative link checked");
}

/// The helpers read documents as intended: continuations, comments,
/// stated statuses, placeholders, quotes.
#[test]
fn doc_commands_are_extracted_as_a_shell_reads_them() {
    let text = "intro\n\n```sh\n# exit status 1: a rule fails\ncargo run --release -- \
                compare a b \\\n  --rules 'my rules.toml' # trailing\nrgrade grade --labels \
                FILE LOGS\n\ncargo test --locked\n```\n\n```text\ncargo run --release -- \
                not a command\n```\n\n```sh\ncargo run --release -- gen --queries 3 -o out\n```\n";
    let commands = doc_commands("t.md", text);
    assert_eq!(commands.len(), 2, "{commands:?}");
    assert_eq!(commands[0].at, "t.md:5");
    assert_eq!(
        commands[0].args,
        ["compare", "a", "b", "--rules", "my rules.toml"]
    );
    assert_eq!(commands[0].status, 1);
    assert_eq!(commands[1].args, ["gen", "--queries", "3", "-o", "out"]);
    assert_eq!(commands[1].status, 0);
    assert_eq!(
        anchors("# A\n## Diagnostics: where evidence disappears\n```\n# not\n```\n## A\n"),
        ["a", "diagnostics-where-evidence-disappears", "a-1"]
    );
    assert_eq!(
        anchor(" Synthetic data: `rgrade gen`"),
        "synthetic-data-rgrade-gen"
    );
    assert_eq!(
        link_targets("see [a](x.md#y) and `[b](not)` [c](#z)"),
        [(1, "x.md#y".to_string()), (1, "#z".to_string())]
    );
    assert_eq!(
        link_targets("as [`rgrade\ntrend`](t.md#u) does, `a\n\n[b](v.md)"),
        [(2, "t.md#u".to_string()), (4, "v.md".to_string())]
    );
}
