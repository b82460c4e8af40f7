//! The optional embedding channel from Python: a Python callable as the
//! [`EmbeddingProvider`], or an OpenAI-compatible `/embeddings` service named by a dict.

use std::fmt;
use std::sync::Arc;

use agent_memory::models::{EmbeddingConfig, HttpEmbedder};
use agent_memory::{EmbeddingProvider, MemoryError};
use async_trait::async_trait;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use pyo3::{PyTraverseError, PyVisit};
use serde::Deserialize;

use crate::convert::from_python;
use crate::errors::invalid;

/// A Python callable that takes a list of texts and returns one vector (a sequence of
/// floats, a NumPy array included) per text, in order. It is called with the GIL held, on
/// the thread that asked for the embedding (every `Memory` method releases the GIL first).
pub(crate) struct PyEmbedder {
    callable: Py<PyAny>,
    /// A recall's query's embedder, taking one text and returning one vector: the
    /// `embed_query` of a LangChain `Embeddings`, the `encode_query` of a sentence-transformers
    /// model. `None`: the query goes through `callable`.
    query: Option<Py<PyAny>>,
    dimension: usize,
}

impl fmt::Debug for PyEmbedder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PyEmbedder")
            .field("dimension", &self.dimension)
            .finish_non_exhaustive()
    }
}

impl PyEmbedder {
    /// Shows Python's cycle collector the callables held: an embedder that is a method of
    /// an object holding the `Memory` (an agent whose `embed` method it is) makes a cycle
    /// the collector can only free when it sees these references.
    pub(crate) fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.callable)?;
        if let Some(query) = &self.query {
            visit.call(query)?;
        }
        Ok(())
    }

    /// The vectors of `texts`, as the callable returns them (their count and lengths are
    /// checked by the library).
    fn call(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>, MemoryError> {
        Python::attach(|py| {
            let returned = self
                .callable
                .call1(py, (texts,))
                .map_err(|error| raised(py, "embedder: the callable failed", error))?;
            returned.extract::<Vec<Vec<f32>>>(py).map_err(|error| {
                MemoryError::invalid(
                    "embedding",
                    format!("the embedder must return one sequence of floats per text: {error}"),
                )
            })
        })
    }
}

/// The error of an embedder callable that raised `error`, kept as its source to be raised
/// again as it was (Ctrl-C, `sys.exit`) or as the cause of the error raised. An `Exception`
/// is [`MemoryError::Unavailable`]: the model behind the callable failed (a LangChain
/// embeddings object whose service is down), which a write reports and a recall rides out
/// without the embedding channel. Anything else (`KeyboardInterrupt`, `SystemExit`) is
/// [`MemoryError::Storage`], which nothing retries or rides out, so the call stops and
/// Python raises it.
fn raised(py: Python<'_>, message: &str, error: PyErr) -> MemoryError {
    if error.is_instance_of::<pyo3::exceptions::PyException>(py) {
        MemoryError::Unavailable {
            message: message.to_owned(),
            source: Some(Box::new(error)),
        }
    } else {
        MemoryError::Storage {
            message: format!("{message}: interrupted"),
            source: Some(Box::new(error)),
        }
    }
}

#[async_trait]
impl EmbeddingProvider for PyEmbedder {
    async fn embed(&self, text: &str) -> agent_memory::Result<Vec<f32>> {
        let mut vectors = self.call(vec![text.to_owned()])?;
        if vectors.len() != 1 {
            return Err(MemoryError::invalid(
                "embedding",
                format!("the embedder returned {} vectors for 1 text", vectors.len()),
            ));
        }
        Ok(vectors.swap_remove(0))
    }

    async fn embed_batch(&self, texts: &[&str]) -> agent_memory::Result<Vec<Vec<f32>>> {
        self.call(texts.iter().map(|text| (*text).to_owned()).collect())
    }

    async fn embed_query(&self, query: &str) -> agent_memory::Result<Vec<f32>> {
        let Some(embed_query) = &self.query else {
            return self.embed(query).await;
        };
        Python::attach(|py| {
            let returned = embed_query
                .call1(py, (query,))
                .map_err(|error| raised(py, "embedder: embed_query failed", error))?;
            returned.extract::<Vec<f32>>(py).map_err(|error| {
                MemoryError::invalid(
                    "embedding",
                    format!("embed_query must return one sequence of floats: {error}"),
                )
            })
        })
    }

    fn dimension(&self) -> usize {
        self.dimension
    }
}

/// The keys of the dict that names an `/embeddings` service.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Service {
    base_url: String,
    model: String,
    dimension: usize,
    #[serde(default)]
    api_key: Option<String>,
    #[serde(default)]
    batch_size: Option<usize>,
    #[serde(default)]
    send_dimensions: bool,
    #[serde(default)]
    query_prefix: String,
    #[serde(default)]
    document_prefix: String,
}

/// The embedder `Memory(embedder=..., embedding_dimension=...)` names: a callable with its
/// dimension; an object with `embed_documents` and `embed_query` (a LangChain
/// `Embeddings`: stored texts through the first, a recall's query through the second) with
/// its dimension; a sentence-transformers model (`encode_document` and `encode_query` from
/// version 5, else `encode`), whose dimension it tells; or a dict naming an
/// OpenAI-compatible `/embeddings` service (`base_url`, `model`, `dimension`; optionally
/// `api_key`, else `AGENT_MEMORY_EMBEDDINGS_API_KEY` or `OPENAI_API_KEY`, `batch_size`,
/// `send_dimensions`, `query_prefix`, `document_prefix`).
///
/// # Errors
/// `InvalidInputError` naming `embedder`, `embedding_dimension` or the dict's key at fault.
/// An embedder as the library takes it, and the same as a [`PyEmbedder`] when it is made of
/// Python callables (for the `Memory` to show them to the cycle collector).
pub(crate) type Embedder = (Arc<dyn EmbeddingProvider>, Option<Arc<PyEmbedder>>);

/// The embedder `value` names.
pub(crate) fn embedder(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
    dimension: Option<usize>,
) -> PyResult<Embedder> {
    if value.is_instance_of::<PyDict>() {
        if dimension.is_some() {
            return Err(invalid(
                py,
                "embedding_dimension",
                "a service's dimension is its dict's `dimension`",
            ));
        }
        let service = from_python::<Service>(value, "embedder")?;
        let mut config = EmbeddingConfig::new(service.base_url, service.model, service.dimension);
        if let Some(batch_size) = service.batch_size {
            config.batch_size = batch_size;
        }
        config.send_dimensions = service.send_dimensions;
        config.query_prefix = service.query_prefix;
        config.document_prefix = service.document_prefix;
        config.http.api_key = service.api_key.or_else(EmbeddingConfig::api_key_from_env);
        let service = HttpEmbedder::new(config).map_err(|error| match error {
            MemoryError::InvalidInput { field, problem } => {
                invalid(py, &format!("embedder.{field}"), problem)
            }
            other => invalid(py, "embedder", other),
        })?;
        return Ok((Arc::new(service), None));
    }
    // A LangChain `Embeddings` (or anything shaped like one): its two methods; a
    // sentence-transformers model: its query and document forms (version 5), or `encode`.
    let langchain = (
        callable_attribute(value, "embed_documents")?,
        callable_attribute(value, "embed_query")?,
    );
    let sentence_transformers = (
        callable_attribute(value, "encode_document")?,
        callable_attribute(value, "encode_query")?,
    );
    let (callable, query) = match (langchain, sentence_transformers) {
        ((Some(documents), Some(query)), _) | (_, (Some(documents), Some(query))) => {
            (documents, Some(query))
        }
        _ => match callable_attribute(value, "encode")? {
            Some(encode) => (encode, None),
            None if value.is_callable() => (value.clone(), None),
            None => {
                return Err(invalid(
                    py,
                    "embedder",
                    "a callable taking a list of texts, an object with embed_documents and \
                     embed_query (LangChain) or encode (sentence-transformers), or a dict \
                     naming an /embeddings service",
                ));
            }
        },
    };
    // A sentence-transformers model knows its length.
    let dimension = match (
        dimension,
        callable_attribute(value, "get_sentence_embedding_dimension")?,
    ) {
        (None, Some(known)) => known
            .call0()
            .and_then(|length| length.extract::<Option<usize>>())
            .map_err(|error| {
                invalid(
                    py,
                    "embedding_dimension",
                    format!("get_sentence_embedding_dimension() gave no length: {error}"),
                )
            })?,
        (dimension, _) => dimension,
    };
    let dimension = match dimension {
        Some(dimension) if (1..=65_536).contains(&dimension) => dimension,
        Some(dimension) => {
            return Err(invalid(
                py,
                "embedding_dimension",
                format!("{dimension} is outside 1 to 65536"),
            ));
        }
        None => {
            return Err(invalid(
                py,
                "embedding_dimension",
                "an embedder that is no service (nor a model that tells it) needs the length \
                 of its vectors",
            ));
        }
    };
    let embedder = Arc::new(PyEmbedder {
        callable: callable.unbind(),
        query: query.map(Bound::unbind),
        dimension,
    });
    Ok((
        Arc::clone(&embedder) as Arc<dyn EmbeddingProvider>,
        Some(embedder),
    ))
}

/// `value.name` when it exists and is callable.
fn callable_attribute<'py>(
    value: &Bound<'py, PyAny>,
    name: &str,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    if !value.hasattr(name)? {
        return Ok(None);
    }
    let attribute = value.getattr(name)?;
    Ok(attribute.is_callable().then_some(attribute))
}
