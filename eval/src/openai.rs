//! A client for OpenAI-compatible chat-completions endpoints (vLLM, llama.cpp server,
//! Ollama, hosted APIs): `POST {URL}/chat/completions` with the system and user messages,
//! temperature 0 unless told otherwise, and the reply's `choices[0].message.content` as the answer, with its
//! `finish_reason` and token `usage` when the server sends them.
//!
//! Each request has a timeout. Failures that may pass (no connection, timeout, HTTP 408, 429
//! or 5xx, a body that is not the expected JSON) are retried with exponential backoff
//! (`backoff`, `2 * backoff`, ...), waiting at least what a `Retry-After` header asks; other
//! HTTP errors (401, 404, ...) are not. An HTTP error carries the server's own message. A
//! request that still fails becomes a [`Reply`] without output whose `error` says why, so one
//! bad request costs one failed answer, not the run; the evaluation counts and reports failed
//! answers apart from invalid ones. The API key, when needed, is read from an environment
//! variable (`OPENAI_API_KEY` unless told otherwise) and sent as a bearer token. Plain
//! `http://` works out of the box; `https://` needs the crate feature `tls`.
//!
//! The defaults suit a local single-request server (llama.cpp, one GPU): one request at a
//! time (the caller's concurrency), a generous timeout, and `max_tokens` sized to the queue
//! (an order needs a few tokens per job). Hosted endpoints take more at once; see
//! docs/eval.md.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::text_policy::{shorten, Ask, Reply, TextModel};

/// Limits of the client; the flags of `openai:` policies in `schedlm eval`.
#[derive(Debug, Clone, PartialEq, clap::Args)]
pub struct ClientOptions {
    /// Timeout of one request to an `openai:` endpoint (connect, send and read together).
    #[arg(long = "request-timeout", value_name = "DURATION", default_value = "300s",
          value_parser = schedlm_model::units::parse_duration)]
    pub timeout: Duration,
    /// Retries of a failed request (no connection, timeout, HTTP 408, 429 or 5xx, malformed
    /// response), with exponential backoff from 1 s, waiting at least what the server's
    /// `Retry-After` asks (at most 5 min). Other HTTP errors (401, 404, ...) are not retried.
    #[arg(long, default_value_t = 2)]
    pub retries: u32,
    /// Wait before the first retry of a request; doubled at each further retry.
    #[arg(long, value_name = "DURATION", default_value = "1s",
          value_parser = schedlm_model::units::parse_duration)]
    pub backoff: Duration,
    /// Environment variable holding the API key of `openai:` endpoints (sent as a bearer token
    /// when set; unset or empty: no key is sent).
    #[arg(long, default_value = "OPENAI_API_KEY")]
    pub api_key_env: String,
    /// `max_tokens` of each request [default: 64 + 8 per queued job, enough for an order of
    /// job ids]. Answers cut off at the limit (`finish_reason: length`) are counted in the
    /// report; raise it for models that reason before answering.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// Sampling temperature (0: the most likely answer, what an evaluation wants; above 0 for
    /// answers that are to vary, as the votes of `extract --llm-samples`). Not a flag.
    #[arg(skip = 0.0)]
    pub temperature: f64,
    /// Send the API key to an `openai:` endpoint over plain `http://` on another machine.
    /// Refused without it: anyone on the network path can read a key sent that way (https and
    /// servers on this machine need no flag).
    #[arg(long)]
    pub allow_http_key: bool,
}

/// Longest wait a `Retry-After` header can impose before one retry.
const MOST_RETRY_AFTER: Duration = Duration::from_secs(300);

/// `max_tokens` for a queue of `jobs` when none is given: 64 plus 8 per queued job (an order
/// of `J12`-style ids takes 2-4 tokens per job in common tokenizers), so a model that rambles
/// is cut off early and counted (`finish_reason: length`) instead of filling a large budget.
pub fn auto_max_tokens(jobs: usize) -> u32 {
    u32::try_from(64 + 8 * jobs).unwrap_or(u32::MAX)
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: Duration::from_secs(300),
            retries: 2,
            backoff: Duration::from_secs(1),
            api_key_env: "OPENAI_API_KEY".into(),
            max_tokens: None,
            temperature: 0.0,
            allow_http_key: false,
        }
    }
}

/// One endpoint and model.
pub struct Client {
    endpoint: String,
    model: String,
    key: Option<String>,
    agent: ureq::Agent,
    options: ClientOptions,
}

/// Why one attempt failed, whether another may succeed, and how long the server asked to
/// wait before it.
struct Failure {
    message: String,
    retry: bool,
    retry_after: Option<Duration>,
}

impl Failure {
    fn retry(message: String) -> Failure {
        Failure {
            message,
            retry: true,
            retry_after: None,
        }
    }
}

impl Client {
    /// A client for `url` (the API base such as `http://127.0.0.1:8000/v1`, or the full
    /// `.../chat/completions` address).
    pub fn new(url: &str, model: &str, options: ClientOptions) -> Result<Client, String> {
        if url.starts_with("https://") && !cfg!(feature = "tls") {
            return Err("https needs schedlm-eval built with the `tls` feature".into());
        }
        let base = url.trim_end_matches('/');
        let endpoint = if base.ends_with("/chat/completions") {
            base.to_string()
        } else {
            format!("{base}/chat/completions")
        };
        let key = std::env::var(&options.api_key_env)
            .ok()
            .filter(|k| !k.is_empty());
        if key.is_some() && !options.allow_http_key {
            if let Some(host) = plain_http_host(url).filter(|h| !is_loopback(h)) {
                return Err(format!(
                    "refusing to send the API key in ${} over plain http to {host}, where \
                     anyone on the way can read it: use https, a server on this machine \
                     (localhost, 127.0.0.1), unset ${}, or pass --allow-http-key",
                    options.api_key_env, options.api_key_env
                ));
            }
        }
        let agent = ureq::AgentBuilder::new().timeout(options.timeout).build();
        Ok(Client {
            endpoint,
            model: model.to_string(),
            key,
            agent,
            options,
        })
    }

    fn attempt(&self, body: &Value) -> Result<Reply, Failure> {
        let mut request = self.agent.post(&self.endpoint);
        if let Some(key) = &self.key {
            request = request.set("Authorization", &format!("Bearer {key}"));
        }
        let response = request.send_json(body).map_err(|e| match e {
            ureq::Error::Status(code, response) => http_failure(code, response),
            ureq::Error::Transport(t) => Failure::retry(format!("transport: {t}")),
        })?;
        let text = response
            .into_string()
            .map_err(|e| Failure::retry(format!("cannot read the response: {e}")))?;
        parse_answer_body(&text).map_err(Failure::retry)
    }
}

/// The host of a plain `http://` URL (without port), `None` for other URLs.
fn plain_http_host(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let authority = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(v6) = authority.strip_prefix('[') {
        return v6.split(']').next();
    }
    Some(authority.split(':').next().unwrap_or(authority))
}

/// Whether a host name or address is this machine (`localhost`, 127.0.0.0/8, `::1`).
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// An HTTP error status: the server's own message (from a JSON `error.message`, `error`,
/// `message` or `detail`, else the start of the body), whether to retry, and `Retry-After`.
fn http_failure(code: u16, response: ureq::Response) -> Failure {
    let retry_after = response
        .header("Retry-After")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| Duration::from_secs_f64(s).min(MOST_RETRY_AFTER));
    let status = response.status_text().to_string();
    let body = response.into_string().unwrap_or_default();
    let said = server_message(&body);
    let mut message = format!("HTTP {code} {status}");
    if !said.is_empty() {
        message.push_str(&format!(": {said}"));
    }
    Failure {
        message,
        retry: matches!(code, 408 | 429) || code >= 500,
        retry_after,
    }
}

/// What an error body says, in one line of at most 300 characters.
fn server_message(body: &str) -> String {
    let value: Option<Value> = serde_json::from_str(body).ok();
    let said = value
        .as_ref()
        .and_then(|v| {
            ["/error/message", "/error", "/message", "/detail"]
                .iter()
                .find_map(|p| v.pointer(p).and_then(Value::as_str))
        })
        .unwrap_or(body);
    shorten(said, 300)
}

/// The answer of a chat-completions response body (a reply without its timing), or what is
/// wrong with the body.
fn parse_answer_body(body: &str) -> Result<Reply, String> {
    let value: Value = serde_json::from_str(body).map_err(|e| {
        format!(
            "the response is not JSON ({e}); it begins `{}`",
            shorten(body, 120)
        )
    })?;
    if let Some(error) = value.get("error").filter(|e| !e.is_null()) {
        let said = error
            .pointer("/message")
            .and_then(Value::as_str)
            .map_or_else(|| shorten(&error.to_string(), 300), |m| shorten(m, 300));
        return Err(format!("the server answered with an error: {said}"));
    }
    let choice = match value.get("choices").and_then(Value::as_array) {
        None => return Err("the response has no `choices`".into()),
        Some(c) if c.is_empty() => return Err("the response's `choices` is empty".into()),
        Some(c) => &c[0],
    };
    let text = choice
        .pointer("/message/content")
        .and_then(Value::as_str)
        .ok_or("the response has no choices[0].message.content")?;
    let usage = |field: &str| {
        value
            .pointer(&format!("/usage/{field}"))
            .and_then(Value::as_u64)
    };
    Ok(Reply {
        output: Some(text.to_string()),
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
        prompt_tokens: usage("prompt_tokens"),
        completion_tokens: usage("completion_tokens"),
        ..Reply::default()
    })
}

impl TextModel for Client {
    fn answer(&self, ask: &Ask<'_>) -> Reply {
        let max_tokens = self
            .options
            .max_tokens
            .unwrap_or_else(|| auto_max_tokens(ask.instance.queue.len()));
        self.complete(ask.system, ask.user, max_tokens)
    }

    fn decoding(&self) -> crate::text_policy::Decoding {
        crate::text_policy::Decoding {
            greedy: format!(
                "endpoint, temperature {}, unconstrained",
                self.options.temperature
            ),
            constrained: Some(false),
            ..Default::default()
        }
    }
}

impl Client {
    /// Asks the endpoint one prompt, with the retries of [`ClientOptions`].
    pub fn complete(&self, system: &str, user: &str, max_tokens: u32) -> Reply {
        let body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "temperature": self.options.temperature,
            "max_tokens": max_tokens,
        });
        let started = Instant::now();
        let mut wait = self.options.backoff;
        let mut attempt = 0;
        let mut retry_reasons = Vec::new();
        loop {
            match self.attempt(&body) {
                Ok(reply) => {
                    return Reply {
                        seconds: Some(started.elapsed().as_secs_f64()),
                        retries: attempt,
                        retry_reasons,
                        ..reply
                    }
                }
                Err(f) if f.retry && attempt < self.options.retries => {
                    retry_reasons.push(retry_reason(&f.message));
                    std::thread::sleep(f.retry_after.map_or(wait, |after| after.max(wait)));
                    wait = wait.saturating_mul(2);
                    attempt += 1;
                }
                Err(f) => {
                    return Reply {
                        error: Some(format!(
                            "request failed after {} attempt(s): {}",
                            attempt + 1,
                            f.message
                        )),
                        seconds: Some(started.elapsed().as_secs_f64()),
                        retries: attempt,
                        retry_reasons,
                        ..Reply::default()
                    }
                }
            }
        }
    }
}

/// A retry's reason, short enough to count: an HTTP status without the server's words
/// (`HTTP 503 Service Unavailable`), other failures (transport errors, malformed bodies) cut to
/// 80 characters.
fn retry_reason(message: &str) -> String {
    let head = if message.starts_with("HTTP ") {
        message.split(": ").next().unwrap_or(message)
    } else {
        message
    };
    shorten(head, 80)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_goes_over_plain_http_only_to_this_machine() {
        assert_eq!(plain_http_host("http://10.0.0.5:8000/v1"), Some("10.0.0.5"));
        assert_eq!(
            plain_http_host("http://u:p@host.example/v1"),
            Some("host.example")
        );
        assert_eq!(plain_http_host("http://[::1]:8000"), Some("::1"));
        assert_eq!(plain_http_host("https://api.example/v1"), None);
        assert!(is_loopback("localhost") && is_loopback("127.0.0.2") && is_loopback("::1"));
        assert!(!is_loopback("10.0.0.5") && !is_loopback("localhost.example.com"));
        let env = "SCHEDLM_TEST_KEY_HTTP";
        std::env::set_var(env, "secret");
        let options = |allow| ClientOptions {
            api_key_env: env.into(),
            allow_http_key: allow,
            ..ClientOptions::default()
        };
        let e = Client::new("http://10.0.0.5:8000/v1", "m", options(false))
            .err()
            .unwrap();
        assert!(
            e.contains("refusing to send the API key") && e.contains("10.0.0.5"),
            "{e}"
        );
        assert!(Client::new("http://10.0.0.5:8000/v1", "m", options(true)).is_ok());
        assert!(Client::new("http://127.0.0.1:8000/v1", "m", options(false)).is_ok());
        std::env::remove_var(env);
        assert!(Client::new("http://10.0.0.5:8000/v1", "m", options(false)).is_ok());
    }

    #[test]
    fn answers_carry_finish_reason_and_usage() {
        let body = r#"{"choices":[{"message":{"content":"J1 J2"},"finish_reason":"length"}],
            "usage":{"prompt_tokens":120,"completion_tokens":9}}"#;
        let a = parse_answer_body(body).unwrap();
        assert_eq!(a.output.as_deref(), Some("J1 J2"));
        assert_eq!(a.finish_reason.as_deref(), Some("length"));
        assert_eq!((a.prompt_tokens, a.completion_tokens), (Some(120), Some(9)));
    }

    #[test]
    fn malformed_bodies_say_what_is_wrong() {
        let cases = [
            ("<html>bad gateway</html>", "not JSON"),
            (r#"{"choices":[]}"#, "`choices` is empty"),
            (r#"{"id":"x"}"#, "no `choices`"),
            (
                r#"{"choices":[{"message":{}}]}"#,
                "no choices[0].message.content",
            ),
            (
                r#"{"error":{"message":"model not loaded"}}"#,
                "model not loaded",
            ),
        ];
        for (body, expected) in cases {
            let err = parse_answer_body(body).unwrap_err();
            assert!(err.contains(expected), "{body}: {err}");
        }
    }

    #[test]
    fn server_messages_come_from_json_or_text() {
        assert_eq!(
            server_message(r#"{"error":{"message":"Invalid API key","type":"auth"}}"#),
            "Invalid API key"
        );
        assert_eq!(server_message(r#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(
            server_message("upstream\n  timed out"),
            "upstream timed out"
        );
        assert_eq!(shorten(&"x".repeat(400), 300).len(), 303);
    }

    #[test]
    fn auto_max_tokens_grows_with_the_queue() {
        assert_eq!(auto_max_tokens(0), 64);
        assert_eq!(auto_max_tokens(30), 304);
    }
}
