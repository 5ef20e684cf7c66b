//! labels.jsonl, the answer key: one JSON object per labeled query, in id
//! order, in the labels format docs/reference.md describes ("Labels").

use super::config::GenConfig;
use super::corpus::Corpus;
use super::encode::{push_json_string, push_list, push_uint};
use super::output::{write_file, WrittenFile};
use super::queries::{LabelShape, QueryName, QuerySpec, QueryStreams};

/// Write labels.jsonl: the labeled queries in id order.
pub(super) fn write_labels(
    config: &GenConfig,
    corpus: &Corpus,
    streams: &QueryStreams,
) -> anyhow::Result<WrittenFile> {
    write_file(&config.out, "labels.jsonl", |output| {
        for index in 0..config.labeled {
            let spec = QuerySpec::draw(&mut streams.rng(index), corpus);
            let query = QueryName::of(config, index);
            push_label(output.start_line(), query, &spec, corpus);
            output.end_line()?;
        }
        Ok(())
    })
}

/// `{"query_id":"q000001","relevant":[...],"task":"howto","language":"en"}`,
/// with `"required":true` for required queries.
fn push_label(line: &mut Vec<u8>, query: QueryName, spec: &QuerySpec, corpus: &Corpus) {
    line.extend_from_slice(b"{\"query_id\":");
    query.push_json(line);
    line.extend_from_slice(b",\"relevant\":");
    match spec.shape {
        LabelShape::Graded => push_list(line, b'{', b'}', spec.judged(), |line, judged| {
            push_json_string(line, corpus.id(judged.doc));
            line.push(b':');
            push_uint(line, u64::from(judged.grade));
        }),
        LabelShape::List | LabelShape::NoAnswer => {
            push_list(line, b'[', b']', spec.judged(), |line, judged| {
                push_json_string(line, corpus.id(judged.doc));
            })
        }
    }
    line.extend_from_slice(b",\"task\":");
    push_json_string(line, spec.task);
    line.extend_from_slice(b",\"language\":");
    push_json_string(line, spec.language);
    if spec.required {
        line.extend_from_slice(b",\"required\":true");
    }
    line.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::queries::Judged;

    #[test]
    fn label_lines_follow_the_labels_format() {
        let corpus = Corpus::of(&["kb/a#chunk-0001", "kb/b#chunk-0002"]);
        let query = QueryName::new(b'q', 3, 10);
        let mut spec = QuerySpec {
            task: "billing",
            language: "de",
            shape: LabelShape::Graded,
            required: true,
            judged: [
                Judged { doc: 1, grade: 3 },
                Judged { doc: 0, grade: 0 },
                Judged { doc: 0, grade: 0 },
                Judged { doc: 0, grade: 0 },
            ],
            judged_len: 2,
        };
        let mut line = Vec::new();
        push_label(&mut line, query, &spec, &corpus);
        assert_eq!(
            String::from_utf8_lossy(&line),
            r#"{"query_id":"q000003","relevant":{"kb/b#chunk-0002":3,"kb/a#chunk-0001":0},"task":"billing","language":"de","required":true}"#
        );
        (spec.shape, spec.required, spec.judged_len) = (LabelShape::List, false, 1);
        line.clear();
        push_label(&mut line, query, &spec, &corpus);
        assert_eq!(
            String::from_utf8_lossy(&line),
            r#"{"query_id":"q000003","relevant":["kb/b#chunk-0002"],"task":"billing","language":"de"}"#
        );
    }
}
