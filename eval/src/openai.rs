//! A client for OpenAI-compatible chat-completions endpoints (vLLM, llama.cpp server,
//! Ollama, ...): `POST {URL}/chat/completions` with the system and user messages, temperature
//! 0, and the reply's `choices[0].message.content` as the answer.
//!
//! Each request has a timeout. Failures that may pass (no connection, timeout, HTTP 429 or
//! 5xx, a body that is not the expected JSON) are retried with exponential backoff
//! (`backoff`, `2 * backoff`, ...); other HTTP errors are not. A request that still fails
//! becomes a [`Reply`] without output whose `error` says why, so one bad request costs one
//! invalid answer, not the run. The API key, when needed, is read from an environment
//! variable (`OPENAI_API_KEY` unless told otherwise) and sent as a bearer token. Plain
//! `http://` works out of the box; `https://` needs the crate feature `tls`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::text::{Ask, Reply, TextModel};

/// Limits of the client.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientOptions {
    /// Timeout of one request (connect, send and read together).
    pub timeout: Duration,
    /// Retries after the first attempt.
    pub retries: u32,
    /// Wait before the first retry; doubled at each further retry.
    pub backoff: Duration,
    /// Environment variable holding the API key (unset or empty: no key is sent).
    pub api_key_env: String,
    /// `max_tokens` of each request.
    pub max_tokens: u32,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            timeout: Duration::from_secs(120),
            retries: 3,
            backoff: Duration::from_millis(500),
            api_key_env: "OPENAI_API_KEY".into(),
            max_tokens: 1024,
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

/// Why one attempt failed, and whether another may succeed.
struct Failure {
    message: String,
    retry: bool,
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
        let agent = ureq::AgentBuilder::new().timeout(options.timeout).build();
        Ok(Client {
            endpoint,
            model: model.to_string(),
            key,
            agent,
            options,
        })
    }

    fn attempt(&self, body: &Value) -> Result<String, Failure> {
        let mut request = self.agent.post(&self.endpoint);
        if let Some(key) = &self.key {
            request = request.set("Authorization", &format!("Bearer {key}"));
        }
        let response = request.send_json(body).map_err(|e| match e {
            ureq::Error::Status(code, _) => Failure {
                message: format!("HTTP {code}"),
                retry: code == 429 || code >= 500,
            },
            ureq::Error::Transport(t) => Failure {
                message: format!("transport: {t}"),
                retry: true,
            },
        })?;
        let text = response.into_string().map_err(|e| Failure {
            message: format!("cannot read the response: {e}"),
            retry: true,
        })?;
        content(&text).map_err(|message| Failure {
            message,
            retry: true,
        })
    }
}

/// `choices[0].message.content` of a chat-completions response body.
fn content(body: &str) -> Result<String, String> {
    let value: Value =
        serde_json::from_str(body).map_err(|e| format!("the response is not JSON: {e}"))?;
    value
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| "the response has no choices[0].message.content".to_string())
}

impl TextModel for Client {
    fn answer(&self, ask: &Ask<'_>) -> Reply {
        self.complete(ask.system, ask.user)
    }
}

impl Client {
    /// Asks the endpoint one prompt, with the retries of [`ClientOptions`].
    pub fn complete(&self, system: &str, user: &str) -> Reply {
        let body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": user},
            ],
            "temperature": 0,
            "max_tokens": self.options.max_tokens,
        });
        let started = Instant::now();
        let mut wait = self.options.backoff;
        let mut attempt = 0;
        loop {
            match self.attempt(&body) {
                Ok(text) => {
                    return Reply {
                        output: Some(text),
                        seconds: Some(started.elapsed().as_secs_f64()),
                        ..Reply::default()
                    }
                }
                Err(f) if f.retry && attempt < self.options.retries => {
                    std::thread::sleep(wait);
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
                        ..Reply::default()
                    }
                }
            }
        }
    }
}
