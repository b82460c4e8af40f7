//! Conversions between Python values and the library's: JSON-like values (metadata, the
//! builder's settings), times, namespaces and scopes, kinds, and settings read with serde.

use agent_memory::{MAX_METADATA_BYTES, MAX_METADATA_DEPTH, MemoryKind, Namespace, Scope};
use chrono::{DateTime, TimeZone, Utc};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};

use crate::errors::{invalid, to_py_err};

/// How deep a Python value may nest before it is refused without looking further: deeper
/// than any metadata the library stores, and shallow enough that a self-containing list
/// cannot exhaust the stack.
const MAX_VALUE_DEPTH: usize = MAX_METADATA_DEPTH + 1;

/// A Python value (dict with string keys, list, tuple, str, int, float, bool, None) as
/// JSON. `field` names the argument in the error a value that is not JSON raises, or one
/// larger as JSON than [`MAX_METADATA_BYTES`] (the most any JSON the library takes may
/// hold): the conversion stops there, however much the value shares (a list holding the
/// same list twice, 32 times over, is four billion values as JSON).
pub(crate) fn to_json(value: &Bound<'_, PyAny>, field: &str) -> PyResult<serde_json::Value> {
    let mut budget = MAX_METADATA_BYTES;
    to_json_at(value, field, 0, &mut budget)
}

/// Takes `bytes` from `budget` (a lower bound of the JSON a value writes); an error once
/// it is spent.
fn spend(value: &Bound<'_, PyAny>, field: &str, budget: &mut usize, bytes: usize) -> PyResult<()> {
    match budget.checked_sub(bytes) {
        Some(left) => {
            *budget = left;
            Ok(())
        }
        None => Err(invalid(
            value.py(),
            field,
            format!("more than the limit of {MAX_METADATA_BYTES} bytes as JSON"),
        )),
    }
}

/// The text of a Python string, refused by `field` when it is not valid Unicode (a lone
/// surrogate).
fn text_of<'a>(value: &'a Bound<'_, PyString>, field: &str) -> PyResult<&'a str> {
    value.to_str().map_err(|_| {
        invalid(
            value.py(),
            field,
            "not valid Unicode (it holds a lone surrogate)",
        )
    })
}

fn to_json_at(
    value: &Bound<'_, PyAny>,
    field: &str,
    depth: usize,
    budget: &mut usize,
) -> PyResult<serde_json::Value> {
    if depth > MAX_VALUE_DEPTH {
        return Err(invalid(
            value.py(),
            field,
            format!("nested more than {MAX_METADATA_DEPTH} levels deep"),
        ));
    }
    // Every value writes a byte at least (a digit, a bracket).
    spend(value, field, budget, 1)?;
    if value.is_none() {
        return Ok(serde_json::Value::Null);
    }
    // bool before int: Python's bool is an int.
    if let Ok(flag) = value.cast::<PyBool>() {
        return Ok(serde_json::Value::Bool(flag.is_true()));
    }
    if let Ok(text) = value.cast::<PyString>() {
        let text = text_of(text, field)?;
        spend(value, field, budget, text.len())?;
        return Ok(serde_json::Value::String(text.to_owned()));
    }
    if value.is_instance_of::<PyInt>() {
        if let Ok(number) = value.extract::<i64>() {
            return Ok(number.into());
        }
        if let Ok(number) = value.extract::<u64>() {
            return Ok(number.into());
        }
        return Err(invalid(
            value.py(),
            field,
            "an integer outside the 64-bit range is not stored",
        ));
    }
    if let Ok(number) = value.cast::<PyFloat>() {
        return serde_json::Number::from_f64(number.value())
            .map(serde_json::Value::Number)
            .ok_or_else(|| invalid(value.py(), field, "NaN and infinities are not JSON"));
    }
    if let Ok(dict) = value.cast::<PyDict>() {
        let mut object = serde_json::Map::with_capacity(dict.len());
        // Over a copy: converting a value may run Python code (a list subclass's
        // `__iter__`) that changes the dict, and iterating a dict that changes panics.
        for (key, item) in dict.copy()?.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                return Err(invalid(
                    value.py(),
                    field,
                    "dictionary keys must be strings",
                ));
            };
            let key = text_of(key, field)?;
            spend(value, field, budget, key.len())?;
            object.insert(key.to_owned(), to_json_at(&item, field, depth + 1, budget)?);
        }
        return Ok(serde_json::Value::Object(object));
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        let mut array = Vec::new();
        for item in value.try_iter()? {
            array.push(to_json_at(&item?, field, depth + 1, budget)?);
        }
        return Ok(serde_json::Value::Array(array));
    }
    let type_name = value.get_type().name()?;
    Err(invalid(
        value.py(),
        field,
        format!(
            "a value of type {type_name} is not JSON (use dict, list, str, int, float, bool or None)"
        ),
    ))
}

/// JSON as Python values: objects become dicts, arrays lists.
pub(crate) fn from_json<'py>(
    py: Python<'py>,
    value: &serde_json::Value,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        serde_json::Value::Null => py.None().into_bound(py),
        serde_json::Value::Bool(flag) => PyBool::new(py, *flag).to_owned().into_any(),
        serde_json::Value::Number(number) => {
            if let Some(integer) = number.as_i64() {
                integer.into_pyobject(py)?.into_any()
            } else if let Some(integer) = number.as_u64() {
                integer.into_pyobject(py)?.into_any()
            } else {
                number
                    .as_f64()
                    .unwrap_or(f64::NAN)
                    .into_pyobject(py)?
                    .into_any()
            }
        }
        serde_json::Value::String(text) => PyString::new(py, text).into_any(),
        serde_json::Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(from_json(py, item)?)?;
            }
            list.into_any()
        }
        serde_json::Value::Object(object) => {
            let dict = PyDict::new(py);
            for (key, item) in object {
                dict.set_item(key, from_json(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// A setting read with serde from a Python value (a dict, or a string for an enum), with
/// the error naming `field`.
pub(crate) fn from_python<T: serde::de::DeserializeOwned>(
    value: &Bound<'_, PyAny>,
    field: &str,
) -> PyResult<T> {
    let json = to_json(value, field)?;
    serde_json::from_value(json).map_err(|error| invalid(value.py(), field, error))
}

/// `datetime(1970, 1, 1, tzinfo=timezone.utc)`.
fn epoch(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static EPOCH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    EPOCH
        .get_or_try_init(py, || {
            let datetime = py.import("datetime")?;
            let utc = datetime.getattr("timezone")?.getattr("utc")?;
            let epoch = datetime
                .getattr("datetime")?
                .call((1970, 1, 1, 0, 0, 0, 0, utc), None)?;
            Ok::<_, PyErr>(epoch.unbind())
        })
        .map(|epoch| epoch.bind(py))
}

fn timedelta(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static TIMEDELTA: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    TIMEDELTA.import(py, "datetime", "timedelta")
}

fn datetime_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static DATETIME: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    DATETIME.import(py, "datetime", "datetime")
}

/// A time given as a `datetime` (naive ones are taken as UTC), an RFC 3339 string, or
/// seconds since the Unix epoch.
pub(crate) fn to_time(value: &Bound<'_, PyAny>, field: &str) -> PyResult<DateTime<Utc>> {
    let py = value.py();
    if let Ok(text) = value.cast::<PyString>() {
        return DateTime::parse_from_rfc3339(text_of(text, field)?)
            .map(|at| at.with_timezone(&Utc))
            .map_err(|error| invalid(py, field, format!("not an RFC 3339 time: {error}")));
    }
    if value.is_instance_of::<PyBool>() {
        return Err(invalid(py, field, "expected a datetime, not a bool"));
    }
    if value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>() {
        // An int too large for a float is out of range, as an infinite one is.
        let seconds: f64 = value.extract().unwrap_or(f64::INFINITY);
        if !seconds.is_finite() {
            return Err(invalid(py, field, "not a finite number of seconds"));
        }
        let nanos = (seconds * 1e9).round();
        if nanos.abs() > i64::MAX as f64 {
            return Err(invalid(py, field, "out of the representable range"));
        }
        return Ok(Utc.timestamp_nanos(nanos as i64));
    }
    if value.is_instance(datetime_type(py)?)? {
        // Naive datetimes are UTC, as the library's times are.
        let aware = if value.getattr("tzinfo")?.is_none() {
            let kwargs = PyDict::new(py);
            kwargs.set_item("tzinfo", epoch(py)?.getattr("tzinfo")?)?;
            value.call_method("replace", (), Some(&kwargs))?
        } else {
            value.clone()
        };
        // Exact to the microsecond: timedelta's fields, not a float timestamp.
        let delta = aware.sub(epoch(py)?)?;
        let days: i64 = delta.getattr("days")?.extract()?;
        let seconds: i64 = delta.getattr("seconds")?.extract()?;
        let micros: i64 = delta.getattr("microseconds")?.extract()?;
        let total = days
            .checked_mul(86_400_000_000)
            .and_then(|us| us.checked_add(seconds * 1_000_000 + micros));
        let Some(total) = total else {
            return Err(invalid(py, field, "out of the representable range"));
        };
        return DateTime::from_timestamp_micros(total)
            .ok_or_else(|| invalid(py, field, "out of the representable range"));
    }
    let type_name = value.get_type().name()?;
    Err(invalid(
        py,
        field,
        format!(
            "expected a datetime, an RFC 3339 string or seconds since the epoch, not {type_name}"
        ),
    ))
}

/// A time as an aware `datetime` in UTC (microseconds: Python keeps no finer).
pub(crate) fn from_time<'py>(py: Python<'py>, at: DateTime<Utc>) -> PyResult<Bound<'py, PyAny>> {
    let micros = at.timestamp_micros();
    let kwargs = PyDict::new(py);
    kwargs.set_item("microseconds", micros)?;
    let delta = timedelta(py)?.call((), Some(&kwargs))?;
    epoch(py)?.add(delta)
}

/// A count given from Python as `field` (a limit, a depth, a number of tokens): a whole
/// number of at least 0.
///
/// Counts are taken from Python as `i64` rather than `usize`, so that a negative one is
/// refused as an `InvalidInputError` naming its argument, not as an `OverflowError` that
/// names none.
pub(crate) fn count(py: Python<'_>, field: &str, value: i64) -> PyResult<usize> {
    usize::try_from(value).map_err(|_| {
        invalid(
            py,
            field,
            format!("must be a whole number of at least 0, got {value}"),
        )
    })
}

/// [`count`] of an optional argument.
pub(crate) fn count_of(py: Python<'_>, field: &str, value: Option<i64>) -> PyResult<Option<usize>> {
    value.map(|value| count(py, field, value)).transpose()
}

/// A namespace from its `a/b/c` form.
pub(crate) fn namespace(py: Python<'_>, text: &str) -> PyResult<Namespace> {
    Namespace::parse(text).map_err(|error| to_py_err(py, error))
}

/// A namespace that may hold records (not the root).
pub(crate) fn record_namespace(py: Python<'_>, text: &str) -> PyResult<Namespace> {
    let namespace = namespace(py, text)?;
    namespace
        .require_record_namespace()
        .map_err(|error| to_py_err(py, error))?;
    Ok(namespace)
}

/// The scope of `text`: that namespace and everything under it, or only it when `exact`.
/// The empty string is every namespace.
pub(crate) fn scope(py: Python<'_>, text: &str, exact: bool) -> PyResult<Scope> {
    let namespace = namespace(py, text)?;
    Ok(if exact && !namespace.is_root() {
        namespace.exact()
    } else {
        namespace.subtree()
    })
}

/// A memory kind from its name (`short_term`, `long_term`, `episodic`, `semantic`).
pub(crate) fn kind(py: Python<'_>, text: &str) -> PyResult<MemoryKind> {
    MemoryKind::parse(text).map_err(|error| to_py_err(py, error))
}

/// Kinds from their names.
pub(crate) fn kinds(py: Python<'_>, names: &[String]) -> PyResult<Vec<MemoryKind>> {
    names.iter().map(|name| kind(py, name)).collect()
}
