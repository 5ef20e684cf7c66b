//! The synthetic corpus: chunked documents in a few collections, each chunk with a
//! fixed size in tokens. Chunk ids look like a help center's
//! (`kb/billing/invoice-export#chunk-0012`,
//! `support/tickets/t-482913#chunk-0003`), and the corpus is small enough
//! that popular chunks recur across queries.

use std::collections::HashSet;
use std::ops::Range;

use rand::RngExt;
use rand_pcg::Pcg64;

use super::random::pick;

/// A collection of documents and the words its document names are made of.
struct Collection {
    path: &'static str,
    /// First words of document slugs, space separated; empty for support
    /// tickets, which are numbered.
    topics: &'static str,
}

/// Second words of document slugs, space separated.
const FACETS: &str = "overview setup settings limits errors steps faq roles export history \
    basics migration reference changes defaults checklist";

const COLLECTIONS: [Collection; 6] = [
    Collection {
        path: "kb/articles",
        topics: "sharing export import calendar search notifications templates folders mobile \
            integrations comments tags dashboards reports backups workflows",
    },
    Collection {
        path: "kb/billing",
        topics: "invoice refund plan seats tax receipt card trial upgrade downgrade currency \
            payment subscription discount vat renewal",
    },
    Collection {
        path: "kb/admin",
        topics: "roles sso saml guests teams permissions audit domains owners workspaces access \
            groups provisioning scim retention policies",
    },
    Collection {
        path: "kb/troubleshooting",
        topics: "login sync upload password email timeout crash export notifications calendar \
            api mobile search attachments session two-factor",
    },
    Collection {
        path: "docs/guides",
        topics: "api webhooks tokens sdk oauth pagination rate-limits cli embedding events \
            scripting automation bulk-edit zapier slack exports",
    },
    Collection {
        path: "support/tickets",
        topics: "",
    },
];

pub(super) const KB_ARTICLES: usize = 0;
pub(super) const KB_BILLING: usize = 1;
pub(super) const KB_ADMIN: usize = 2;
pub(super) const KB_TROUBLESHOOTING: usize = 3;
pub(super) const DOCS_GUIDES: usize = 4;
pub(super) const SUPPORT_TICKETS: usize = 5;

/// Chunks per document are numbered below this.
const CHUNKS_PER_DOC: u32 = 48;
/// Chunk sizes in tokens.
const CHUNK_TOKENS: Range<u32> = 90..420;
/// The fewest chunks drawn per collection.
const MIN_CHUNKS_PER_COLLECTION: usize = 4_000;

/// Every chunk the system can return, with its size in tokens.
pub(super) struct Corpus {
    /// All chunk ids, back to back.
    text: String,
    /// Where each chunk id ends in `text`.
    ends: Vec<usize>,
    tokens: Vec<u32>,
    /// The chunks of each entry of `COLLECTIONS`.
    collections: Vec<Range<u32>>,
}

impl Corpus {
    /// Draw enough chunks that a ranking of `results` distinct chunks takes
    /// few rejected draws (at least three times as many chunks as results),
    /// yet few enough that popular chunks recur across queries.
    pub(super) fn generate(rng: &mut Pcg64, results: usize) -> Self {
        let per_collection = MIN_CHUNKS_PER_COLLECTION.max(results.div_ceil(2));
        let mut corpus = Corpus {
            text: String::new(),
            ends: Vec::with_capacity(per_collection * COLLECTIONS.len()),
            tokens: Vec::with_capacity(per_collection * COLLECTIONS.len()),
            collections: Vec::with_capacity(COLLECTIONS.len()),
        };
        let facets: Vec<&str> = FACETS.split_whitespace().collect();
        let mut seen = HashSet::new();
        for collection in &COLLECTIONS {
            let topics: Vec<&str> = collection.topics.split_whitespace().collect();
            let start = corpus.len();
            while corpus.len() - start < per_collection as u32 {
                let id = chunk_id(rng, collection.path, &topics, &facets);
                if seen.insert(id.clone()) {
                    corpus.text.push_str(&id);
                    corpus.ends.push(corpus.text.len());
                    corpus.tokens.push(rng.random_range(CHUNK_TOKENS));
                }
            }
            corpus.collections.push(start..corpus.len());
        }
        corpus
    }

    pub(super) fn len(&self) -> u32 {
        self.ends.len() as u32
    }

    pub(super) fn id(&self, doc: u32) -> &str {
        let doc = doc as usize;
        let start = if doc == 0 { 0 } else { self.ends[doc - 1] };
        &self.text[start..self.ends[doc]]
    }

    /// The size of chunk `doc` in tokens.
    pub(super) fn tokens(&self, doc: u32) -> u32 {
        self.tokens[doc as usize]
    }

    pub(super) fn random_doc_in(&self, rng: &mut Pcg64, collection: usize) -> u32 {
        rng.random_range(self.collections[collection].clone())
    }

    /// A corpus of the given ids, 100 tokens each, all in the first
    /// collection.
    #[cfg(test)]
    pub(super) fn of(ids: &[&str]) -> Self {
        let mut corpus = Corpus {
            text: String::new(),
            ends: vec![],
            tokens: vec![],
            collections: vec![],
        };
        for id in ids {
            corpus.text.push_str(id);
            corpus.ends.push(corpus.text.len());
            corpus.tokens.push(100);
        }
        corpus.collections.push(0..corpus.len());
        corpus
    }
}

/// A random chunk id in the collection at `path`, such as
/// `kb/admin/sso-setup#chunk-0003`, or `support/tickets/t-482913#chunk-0003`
/// when the collection has no topics.
fn chunk_id(rng: &mut Pcg64, path: &str, topics: &[&str], facets: &[&str]) -> String {
    let document = if topics.is_empty() {
        format!("t-{}", rng.random_range(100_000..1_000_000u32))
    } else {
        format!("{}-{}", pick(rng, topics), pick(rng, facets))
    };
    let chunk = rng.random_range(0..CHUNKS_PER_DOC);
    format!("{path}/{document}#chunk-{chunk:04}")
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn corpus_ids_are_unique_and_safe() {
        let corpus = Corpus::generate(&mut Pcg64::seed_from_u64(1), 10);
        let ids: HashSet<&str> = (0..corpus.len()).map(|doc| corpus.id(doc)).collect();
        assert_eq!(ids.len(), corpus.len() as usize);
        assert!(ids.iter().all(|id| id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/#-".contains(&b))));
        assert!(ids.contains(corpus.id(0)) && corpus.id(0).starts_with("kb/articles/"));
        assert!(corpus
            .id(corpus.len() - 1)
            .starts_with("support/tickets/t-"));
    }
}
