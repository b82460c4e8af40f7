//! Request counts and latencies by route, in the Prometheus text format (written here: two
//! metric families do not need a metrics crate).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds of the latency buckets, in seconds.
const BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
];

#[derive(Debug, Default)]
struct Histogram {
    buckets: [u64; BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Debug, Default)]
struct Inner {
    /// (method, route, status) -> count.
    requests: BTreeMap<(String, String, u16), u64>,
    /// (method, route) -> latencies.
    latencies: BTreeMap<(String, String), Histogram>,
}

/// The server's request metrics.
/// The label a request's method is counted under: the method's name when it is one of the
/// standard nine, `OTHER` for the rest. A client chooses the method (hyper accepts any token
/// of any length, before any key is checked), so counting it as sent would let anyone add
/// entries to the metrics without bound; the route label is bounded the same way
/// (`unmatched`).
pub(crate) fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    const STANDARD: [(Method, &str); 9] = [
        (Method::GET, "GET"),
        (Method::POST, "POST"),
        (Method::PUT, "PUT"),
        (Method::DELETE, "DELETE"),
        (Method::PATCH, "PATCH"),
        (Method::HEAD, "HEAD"),
        (Method::OPTIONS, "OPTIONS"),
        (Method::CONNECT, "CONNECT"),
        (Method::TRACE, "TRACE"),
    ];
    STANDARD
        .iter()
        .find(|(standard, _)| standard == method)
        .map_or("OTHER", |(_, label)| label)
}

#[derive(Debug, Default)]
pub(crate) struct Metrics {
    inner: Mutex<Inner>,
}

impl Metrics {
    /// Records one request.
    pub(crate) fn record(&self, method: &str, route: &str, status: u16, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        // A poisoned lock only means another request panicked while recording: keep counting.
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *inner
            .requests
            .entry((method.to_owned(), route.to_owned(), status))
            .or_default() += 1;
        let histogram = inner
            .latencies
            .entry((method.to_owned(), route.to_owned()))
            .or_default();
        histogram.count += 1;
        histogram.sum += seconds;
        for (bucket, bound) in histogram.buckets.iter_mut().zip(BUCKETS) {
            if seconds <= bound {
                *bucket += 1;
            }
        }
    }

    /// The metrics in the Prometheus text exposition format.
    pub(crate) fn render(&self) -> String {
        let inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out = String::new();
        out.push_str(
            "# HELP agent_memory_http_requests_total HTTP requests by method, route and status.\n",
        );
        out.push_str("# TYPE agent_memory_http_requests_total counter\n");
        for ((method, route, status), count) in &inner.requests {
            let _ = writeln!(
                out,
                "agent_memory_http_requests_total{{method=\"{method}\",route=\"{}\",status=\"{status}\"}} {count}",
                escape(route)
            );
        }
        out.push_str("# HELP agent_memory_http_request_duration_seconds HTTP request latency by method and route.\n");
        out.push_str("# TYPE agent_memory_http_request_duration_seconds histogram\n");
        for ((method, route), histogram) in &inner.latencies {
            let labels = format!("method=\"{method}\",route=\"{}\"", escape(route));
            for (count, bound) in histogram.buckets.iter().zip(BUCKETS) {
                let _ = writeln!(
                    out,
                    "agent_memory_http_request_duration_seconds_bucket{{{labels},le=\"{bound}\"}} {count}"
                );
            }
            let _ = writeln!(
                out,
                "agent_memory_http_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                histogram.count
            );
            let _ = writeln!(
                out,
                "agent_memory_http_request_duration_seconds_sum{{{labels}}} {}",
                histogram.sum
            );
            let _ = writeln!(
                out,
                "agent_memory_http_request_duration_seconds_count{{{labels}}} {}",
                histogram.count
            );
        }
        out
    }
}

fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counts_and_cumulative_buckets() {
        let metrics = Metrics::default();
        metrics.record("POST", "/v1/recall", 200, Duration::from_millis(3));
        metrics.record("POST", "/v1/recall", 200, Duration::from_millis(30));
        let text = metrics.render();
        assert!(text.contains(
            "agent_memory_http_requests_total{method=\"POST\",route=\"/v1/recall\",status=\"200\"} 2"
        ));
        assert!(text.contains("le=\"0.005\"} 1"), "{text}");
        assert!(text.contains("le=\"0.05\"} 2"), "{text}");
        assert!(text.contains("_count{method=\"POST\",route=\"/v1/recall\"} 2"));
    }

    #[test]
    fn a_method_outside_the_standard_nine_is_counted_as_other() {
        use axum::http::Method;
        assert_eq!(method_label(&Method::PATCH), "PATCH");
        assert_eq!(method_label(&Method::GET), "GET");
        let invented = Method::from_bytes(&[b'A'; 10_000]).expect("a method token");
        assert_eq!(method_label(&invented), "OTHER");
        assert_eq!(
            method_label(&Method::from_bytes(b"PROPFIND").expect("token")),
            "OTHER"
        );
    }
}
