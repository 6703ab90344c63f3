//! The OpenAI-compatible client against a real HTTP server on 127.0.0.1 started by the test:
//! normal answers, slow answers past the timeout, HTTP 500 then success, malformed JSON,
//! garbage text, and a whole snapshot evaluation through the endpoint.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use schedlm_eval::data::load_dataset;
use schedlm_eval::openai::{Client, ClientOptions};
use schedlm_eval::policy::parse_list;
use schedlm_eval::snapshot::{evaluate, SnapshotOptions};
use schedlm_eval::text_policy::{answer_all, Ask};
use serde_json::{json, Value};

/// What the server answers to one request.
struct Answer {
    delay: Duration,
    status: u16,
    body: String,
    /// Extra response header lines, each ending in `\r\n`.
    headers: String,
}

fn ok(content: &str) -> Answer {
    Answer {
        delay: Duration::ZERO,
        status: 200,
        headers: String::new(),
        body:
            json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]})
                .to_string(),
    }
}

/// A request as the server saw it.
#[derive(Clone, Debug)]
struct Seen {
    path: String,
    authorization: Option<String>,
    body: Value,
}

type Handler = dyn Fn(usize, &Seen) -> Answer + Send + Sync;

/// Starts a server; returns its base URL and the requests seen so far.
fn serve(handler: Box<Handler>) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let count = Arc::new(AtomicUsize::new(0));
    let handler: Arc<Handler> = Arc::from(handler);
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (handler, log, count) = (handler.clone(), log.clone(), count.clone());
            std::thread::spawn(move || answer(stream, &*handler, &log, &count));
        }
    });
    (url, seen)
}

fn answer(stream: TcpStream, handler: &Handler, log: &Mutex<Vec<Seen>>, count: &AtomicUsize) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    let path = first.split_whitespace().nth(1).unwrap_or("").to_string();
    let (mut length, mut authorization) = (0, None);
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':').unwrap();
        match k.to_ascii_lowercase().as_str() {
            "content-length" => length = v.trim().parse().unwrap(),
            "authorization" => authorization = Some(v.trim().to_string()),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let seen = Seen {
        path,
        authorization,
        body: serde_json::from_slice(&body).unwrap(),
    };
    let n = count.fetch_add(1, Ordering::SeqCst);
    log.lock().unwrap().push(seen.clone());
    let a = handler(n, &seen);
    std::thread::sleep(a.delay);
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n{}",
        a.status,
        a.body.len(),
        a.headers,
        a.body
    );
}

fn options(timeout_ms: u64, retries: u32) -> ClientOptions {
    ClientOptions {
        timeout: Duration::from_millis(timeout_ms),
        retries,
        backoff: Duration::from_millis(10),
        api_key_env: "SCHEDLM_EVAL_TEST_UNSET_KEY".into(),
        max_tokens: Some(64),
        temperature: 0.0,
        allow_http_key: false,
    }
}

#[test]
fn normal_answers_carry_the_prompt_and_the_key() {
    // The key comes from the named variable; PATH is always set, and reading it avoids
    // changing the environment of a multi-threaded test process.
    let (url, seen) = serve(Box::new(|_, _| ok("J2 J1")));
    let with_key = ClientOptions {
        api_key_env: "PATH".into(),
        ..options(2000, 0)
    };
    let client = Client::new(&url, "tiny", with_key).unwrap();
    let reply = client.complete("sys", "user text", 64);
    assert_eq!(reply.output.as_deref(), Some("J2 J1"));
    assert!(reply.error.is_none() && reply.seconds.is_some());
    let seen = seen.lock().unwrap();
    assert_eq!(seen[0].path, "/v1/chat/completions");
    let key = format!("Bearer {}", std::env::var("PATH").unwrap());
    assert_eq!(seen[0].authorization.as_deref(), Some(key.as_str()));
    assert_eq!(seen[0].body["model"], "tiny");
    assert_eq!(seen[0].body["temperature"], 0.0);
    assert_eq!(seen[0].body["messages"][0]["content"], "sys");
    assert_eq!(seen[0].body["messages"][1]["role"], "user");
    assert_eq!(seen[0].body["messages"][1]["content"], "user text");
}

#[test]
fn slow_answers_time_out_and_are_retried() {
    let slow = |n: usize, _: &Seen| Answer {
        delay: Duration::from_millis(if n == 0 { 800 } else { 0 }),
        ..ok("J1")
    };
    let (url, _) = serve(Box::new(slow));
    // No retry: the first (slow) answer is a timeout.
    let reply = Client::new(&url, "m", options(200, 0))
        .unwrap()
        .complete("s", "u", 64);
    assert!(reply.output.is_none());
    let error = reply.error.unwrap();
    assert!(
        error.contains("after 1 attempt") && error.contains("transport"),
        "{error}"
    );
    // With a retry the second, fast answer comes through.
    let (url, seen) = serve(Box::new(slow));
    let reply = Client::new(&url, "m", options(200, 1))
        .unwrap()
        .complete("s", "u", 64);
    assert_eq!(reply.output.as_deref(), Some("J1"));
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[test]
fn server_errors_are_retried_client_errors_are_not() {
    let flaky = |n: usize, _: &Seen| {
        if n < 2 {
            Answer {
                status: 500,
                body: "{\"error\": \"overloaded\"}".into(),
                ..ok("")
            }
        } else {
            ok("J1")
        }
    };
    let (url, seen) = serve(Box::new(flaky));
    let reply = Client::new(&url, "m", options(2000, 3))
        .unwrap()
        .complete("s", "u", 64);
    assert_eq!(reply.output.as_deref(), Some("J1"));
    assert_eq!(seen.lock().unwrap().len(), 3);

    let bad_request = |_: usize, _: &Seen| Answer {
        status: 400,
        body: "{}".into(),
        ..ok("")
    };
    let (url, seen) = serve(Box::new(bad_request));
    let reply = Client::new(&url, "m", options(2000, 3))
        .unwrap()
        .complete("s", "u", 64);
    assert!(reply.error.unwrap().contains("HTTP 400"));
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn malformed_json_and_garbage_text() {
    let malformed = |_: usize, _: &Seen| Answer {
        body: "{\"choices\": [".into(),
        ..ok("")
    };
    let (url, seen) = serve(Box::new(malformed));
    let reply = Client::new(&url, "m", options(2000, 2))
        .unwrap()
        .complete("s", "u", 64);
    let error = reply.error.unwrap();
    assert!(
        error.contains("after 3 attempt") && error.contains("not JSON"),
        "{error}"
    );
    assert_eq!(seen.lock().unwrap().len(), 3);

    let wrong_shape = |_: usize, _: &Seen| Answer {
        body: "{\"choices\": []}".into(),
        ..ok("")
    };
    let (url, _) = serve(Box::new(wrong_shape));
    let reply = Client::new(&url, "m", options(2000, 0))
        .unwrap()
        .complete("s", "u", 64);
    let error = reply.error.unwrap();
    assert!(error.contains("`choices` is empty"), "{error}");

    // Garbage text is an answer: the client returns it and scoring marks it invalid.
    let (url, _) = serve(Box::new(|_, _| ok("\u{1F600} lorem ipsum")));
    let reply = Client::new(&url, "m", options(2000, 0))
        .unwrap()
        .complete("s", "u", 64);
    assert_eq!(reply.output.as_deref(), Some("\u{1F600} lorem ipsum"));
}

#[test]
fn unreachable_server_and_bounded_concurrency() {
    // A port with nothing listening: a transport error after the retries.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let client = Client::new(&format!("http://127.0.0.1:{port}/v1"), "m", options(500, 1)).unwrap();
    assert!(client
        .complete("s", "u", 64)
        .error
        .unwrap()
        .contains("after 2 attempt"));

    // Replies come back in prompt order whatever the completion order.
    let echo = |_: usize, seen: &Seen| {
        let user = seen.body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .to_string();
        let delay = Duration::from_millis(if user == "0" { 150 } else { 0 });
        Answer { delay, ..ok(&user) }
    };
    let (url, _) = serve(Box::new(echo));
    let client = Client::new(&url, "m", options(2000, 0)).unwrap();
    let instance = &common::records(schedlm_generator::Family::Hpc, 1, 1)[0].instance;
    let users: Vec<String> = (0..6).map(|i| i.to_string()).collect();
    let asks: Vec<Ask<'_>> = users
        .iter()
        .map(|user| Ask {
            system: "s",
            user,
            instance,
            objective: schedlm_model::Objective::Bsld,
            variant: schedlm_model::Variant::Serial,
            template: schedlm_dataset::Template::Compact,
        })
        .collect();
    let replies = answer_all(&client, &asks, 3, &|_, _| {});
    let outs: Vec<String> = replies.into_iter().map(|r| r.output.unwrap()).collect();
    assert_eq!(outs, vec!["0", "1", "2", "3", "4", "5"]);
}

#[test]
fn snapshot_evaluation_through_an_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let records = common::records(schedlm_generator::Family::Hpc, 4, 3);
    let path = dir.path().join("test.jsonl");
    common::write_records(&path, &records);
    // Answer J1..Jn: the queue order.
    let answer = move |_: usize, seen: &Seen| {
        let user = seen.body["messages"][1]["content"].as_str().unwrap();
        let jobs = (1..100)
            .take_while(|k| user.contains(&format!("J{k} ")))
            .count();
        let ids: Vec<String> = (1..=jobs).map(|k| format!("J{k}")).collect();
        ok(&ids.join(" "))
    };
    let (url, _) = serve(Box::new(answer));
    let data = load_dataset(&path).unwrap();
    let specs = parse_list(&format!("fcfs,openai:{url}#m")).unwrap();
    let options = SnapshotOptions {
        client: options(5000, 1),
        concurrency: 2,
        ..SnapshotOptions::default()
    };
    let eval = evaluate(&data, &specs, &options).unwrap();
    let model: Vec<_> = eval
        .rows
        .iter()
        .filter(|r| r.policy.starts_with("openai:"))
        .collect();
    assert_eq!(model.len(), 4);
    for (row, fcfs) in model
        .iter()
        .zip(eval.rows.iter().filter(|r| r.policy == "fcfs"))
    {
        assert!(row.valid, "{}", row.defects);
        assert!(row.seconds.is_some());
        // The queue order is FCFS for generated instances (submit order).
        assert!((row.value - fcfs.value).abs() < 1e-9);
    }
}

#[test]
fn online_replay_through_an_endpoint_falls_back_on_garbage() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("; MaxProcs: 8\n");
    for i in 1..=12u64 {
        let (submit, run, procs) = (i * 10, 30 + (i * 17) % 90, 1 + (i * 3) % 8);
        text += &format!(
            "{i} {submit} -1 {run} {procs} -1 -1 {procs} {} -1 1 1 -1 -1 -1 -1 -1 -1\n",
            run + 20
        );
    }
    let trace = dir.path().join("t.swf");
    std::fs::write(&trace, text).unwrap();
    let (url, seen) = serve(Box::new(|_, _| ok("I cannot schedule this.")));
    let specs = parse_list(&format!("fcfs,openai:{url}#m")).unwrap();
    let options = schedlm_eval::online::OnlineOptions {
        ls_evaluations: 100,
        template: schedlm_dataset::Template::Compact,
        client: options(2000, 0),
        ..Default::default()
    };
    let eval = schedlm_eval::online::evaluate_online(&trace, &specs, &options).unwrap();
    let model = &eval.replays[1];
    assert!(model.decisions > 0);
    assert_eq!(model.fallbacks, model.decisions);
    assert_eq!(seen.lock().unwrap().len(), model.decisions);
    // Every decision fell back to FCFS: the same schedule as the FCFS rule.
    assert_eq!(model.result.jobs, eval.replays[0].result.jobs);
}

#[test]
fn http_errors_carry_the_server_message_and_retry_after_is_honoured() {
    let unauthorized = |_: usize, _: &Seen| Answer {
        status: 401,
        body: r#"{"error": {"message": "Invalid API key", "type": "auth"}}"#.into(),
        ..ok("")
    };
    let (url, seen) = serve(Box::new(unauthorized));
    let error = Client::new(&url, "m", options(2000, 3))
        .unwrap()
        .complete("s", "u", 64)
        .error
        .unwrap();
    assert!(
        error.contains("HTTP 401") && error.contains("Invalid API key"),
        "{error}"
    );
    assert_eq!(seen.lock().unwrap().len(), 1, "401 is not retried");

    // 429 with Retry-After: 1 waits a second (the backoff alone is 10 ms), then succeeds.
    let limited = |n: usize, _: &Seen| {
        if n == 0 {
            Answer {
                status: 429,
                body: r#"{"error": {"message": "slow down"}}"#.into(),
                headers: "Retry-After: 1\r\n".into(),
                ..ok("")
            }
        } else {
            ok("J1")
        }
    };
    let (url, seen) = serve(Box::new(limited));
    let started = std::time::Instant::now();
    let reply = Client::new(&url, "m", options(2000, 2))
        .unwrap()
        .complete("s", "u", 64);
    assert_eq!(reply.output.as_deref(), Some("J1"));
    assert_eq!(seen.lock().unwrap().len(), 2);
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "Retry-After ignored: {:?}",
        started.elapsed()
    );
}

#[test]
fn finish_reason_usage_and_max_tokens_reach_the_reply() {
    let cut = |_: usize, seen: &Seen| {
        let max = seen.body["max_tokens"].as_u64().unwrap();
        Answer {
            body: json!({
                "choices": [{"message": {"content": "J1 J"}, "finish_reason": "length"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": max},
            })
            .to_string(),
            ..ok("")
        }
    };
    let (url, _) = serve(Box::new(cut));
    let reply = Client::new(&url, "m", options(2000, 0))
        .unwrap()
        .complete("s", "u", 7);
    assert!(reply.truncated());
    assert_eq!(reply.prompt_tokens, Some(100));
    assert_eq!(reply.completion_tokens, Some(7));
}

#[test]
fn a_dead_endpoint_is_never_best_and_its_failures_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let records = common::records(schedlm_generator::Family::Hpc, 3, 5);
    let path = dir.path().join("test.jsonl");
    common::write_records(&path, &records);
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead = format!("openai:http://127.0.0.1:{port}/v1#m");
    let data = load_dataset(&path).unwrap();
    let specs = parse_list(&format!("{dead},fcfs,sjf")).unwrap();
    let log = std::sync::Arc::new(
        schedlm_eval::answers::AnswerLog::open(&dir.path().join("report"), false).unwrap(),
    );
    let options = SnapshotOptions {
        client: options(500, 0),
        answers: Some(log.clone()),
        ..SnapshotOptions::default()
    };
    let eval = evaluate(&data, &specs, &options).unwrap();
    let dead_rows: Vec<_> = eval
        .rows
        .iter()
        .filter(|r| r.policy.starts_with("openai:"))
        .collect();
    assert_eq!(dead_rows.len(), 3);
    assert!(dead_rows.iter().all(|r| r.failed && !r.valid));
    assert!(
        eval.warnings
            .iter()
            .any(|n| n.contains("3 of 3 answers failed") && n.contains("transport")),
        "{:?}",
        eval.warnings
    );
    let stats = schedlm_eval::stats::summarize(&eval.policies, &eval.rows);
    // The dead endpoint's rows hold FCFS values, so it ties FCFS on the mean; it still ranks
    // after every policy whose answers were all valid.
    assert_eq!(
        stats.ranking.last().map(String::as_str),
        Some(dead.as_str())
    );
    let p = stats.policies.iter().find(|p| p.policy == dead).unwrap();
    assert_eq!((p.failed, p.instances), (3, 3));
    // Every failed answer is in answers.jsonl, with its reason.
    let text = std::fs::read_to_string(log.path()).unwrap();
    assert_eq!(text.lines().count(), 3);
    assert!(text
        .lines()
        .all(|l| l.contains("\"error\":\"request failed")));
}
