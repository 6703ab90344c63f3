//! One bad instance per [`InstanceError`] variant (SPEC section 1): each must be rejected with
//! exactly that error, and its message must name the job (or server) and the field.

use schedlm_model::{problems, validate, Instance, InstanceError, Problem, MAX_MAGNITUDE};

fn parse(json: &str) -> Instance {
    Instance::from_json(json).expect("test instance parses")
}

/// Asserts that `json` is rejected with exactly `expected` (by `validate` and `Problem::new`)
/// and that the message contains every string of `names`.
fn rejects(json: &str, expected: InstanceError, names: &[&str]) {
    let instance = parse(json);
    let err = validate(&instance).expect_err("instance must be rejected");
    assert_eq!(err, expected);
    assert_eq!(Problem::new(&instance).unwrap_err(), expected);
    let message = err.to_string();
    for name in names {
        assert!(
            message.contains(name),
            "message {message:?} does not name {name:?}"
        );
    }
}

const VALID: &str = r#"{
  "now": 86400,
  "resources": ["cores", "mem_gib", "gpus"],
  "servers": [ {"id": "n0", "capacity": [64, 256, 4]},
               {"id": "n1", "capacity": [32, 128, 0]} ],
  "running": [ {"id": "r7", "server": "n0", "demand": [16, 64, 2], "end": 90000} ],
  "queue":   [ {"id": "j3", "submit": 86000, "demand": [8, 32, 1], "walltime": 3600,
                "runtime": 2710, "deps": ["r7"], "weight": 1, "user": "u12",
                "meta": {"model": "resnet50", "batch_size": 256}},
               {"id": "j4", "submit": 86400, "demand": [32, 128, 0], "walltime": 1,
                "deps": ["j3"], "weight": 2.5} ]
}"#;

#[test]
fn the_spec_example_is_valid() {
    let instance = parse(VALID);
    assert_eq!(validate(&instance), Ok(()));
    assert!(problems(&instance).is_empty());
    let p = Problem::new(&instance).unwrap();
    assert_eq!(p.jobs(), 2);
    assert_eq!(p.servers(), 2);
    assert_eq!(p.resources(), 3);
    assert_eq!(p.weight(0), 1.0);
    assert_eq!(p.weight(1), 2.5);
    assert_eq!(p.released(0), 90000);
    assert_eq!(p.deps(1), &[0]);
    // j4 needs 32 cores and no gpu: it fits both servers; j3 needs a gpu: only n0.
    assert!(p.fits(0, 0) && !p.fits(0, 1));
    assert!(p.fits(1, 0) && p.fits(1, 1));
    // Round trip through JSON keeps the instance.
    assert_eq!(parse(&instance.to_json()), instance);
}

#[test]
fn optional_fields_default() {
    let instance = parse(
        r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [1]}],
            "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 1}]}"#,
    );
    assert!(instance.running.is_empty());
    let job = &instance.queue[0];
    assert_eq!(job.weight, 1.0);
    assert!(job.deps.is_empty() && job.runtime.is_none());
    assert_eq!(validate(&instance), Ok(()));
}

const EXTRA_FIELDS: &str = r#"{"now": 0, "resources": ["cores"], "comment": "extra", "version": 3,
    "servers": [{"id": "n0", "capacity": [4], "rack": "A1"}],
    "running": [{"id": "r", "server": "n0", "demand": [1], "end": 9, "start": -5}],
    "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 1,
               "priority": 7, "extra": {"nested": [1, 2]}, "meta": {"free": ["json"]}}]}"#;

#[test]
fn unknown_fields_are_rejected_naming_each_with_its_job() {
    assert!(Instance::from_json(EXTRA_FIELDS).is_err());
    let err = schedlm_model::parse_valid(EXTRA_FIELDS).unwrap_err();
    let parts: Vec<&str> = err.split("; ").collect();
    assert_eq!(
        parts,
        [
            "the instance: unknown field \"comment\" (known: now, resources, servers, running, queue)",
            "the instance: unknown field \"version\" (known: now, resources, servers, running, queue)",
            "server \"n0\": unknown field \"rack\" (known: id, capacity)",
            "running job \"r\": unknown field \"start\" (known: id, server, demand, end)",
            "queue job \"a\": unknown field \"priority\" (known: id, submit, demand, walltime, runtime, deps, weight, user, meta)",
            "queue job \"a\": unknown field \"extra\" (known: id, submit, demand, walltime, runtime, deps, weight, user, meta)",
        ]
    );
}

#[test]
fn unknown_fields_pass_when_asked_and_are_reported_back() {
    let (instance, ignored) =
        schedlm_model::parse_valid_with(EXTRA_FIELDS, schedlm_model::UnknownFields::Ignore)
            .unwrap();
    assert_eq!(ignored.len(), 6);
    assert_eq!(validate(&instance), Ok(()));
    assert!(Problem::new(&instance).is_ok());
    assert!(
        !instance.to_json().contains("priority"),
        "ignored fields are not carried"
    );
    assert!(
        instance.to_json().contains("\"free\""),
        "meta is kept whole"
    );
}

#[test]
fn no_resources() {
    rejects(
        r#"{"now": 0, "resources": [], "servers": [{"id": "n0", "capacity": []}],
            "queue": [{"id": "a", "submit": 0, "demand": [], "walltime": 1}]}"#,
        InstanceError::NoResources,
        &["`resources`"],
    );
}

#[test]
fn duplicate_resource() {
    rejects(
        r#"{"now": 0, "resources": ["cores", "mem", "cores"],
            "servers": [{"id": "n0", "capacity": [1, 1, 1]}],
            "queue": [{"id": "a", "submit": 0, "demand": [1, 1, 1], "walltime": 1}]}"#,
        InstanceError::DuplicateResource("cores".into()),
        &["`resources`", "\"cores\""],
    );
}

#[test]
fn no_servers() {
    rejects(
        r#"{"now": 0, "resources": ["cores"], "servers": [],
            "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 1}]}"#,
        InstanceError::NoServers,
        &["`servers`"],
    );
}

#[test]
fn empty_queue() {
    rejects(
        r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [1]}],
            "queue": []}"#,
        InstanceError::EmptyQueue,
        &["`queue`"],
    );
}

#[test]
fn duplicate_id() {
    // "x" is both a running job and a queued job.
    rejects(
        r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [2]}],
            "running": [{"id": "x", "server": "n0", "demand": [1], "end": 5}],
            "queue": [{"id": "x", "submit": 0, "demand": [1], "walltime": 1}]}"#,
        InstanceError::DuplicateId {
            id: "x".into(),
            first: "a running job",
            second: "a queued job",
        },
        &["\"x\"", "running", "queued"],
    );
    // Between a server and a queued job.
    rejects(
        r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [2]}],
            "queue": [{"id": "n0", "submit": 0, "demand": [1], "walltime": 1}]}"#,
        InstanceError::DuplicateId {
            id: "n0".into(),
            first: "a server",
            second: "a queued job",
        },
        &["\"n0\""],
    );
}

#[test]
fn wrong_length() {
    rejects(
        r#"{"now": 0, "resources": ["cores", "mem"],
            "servers": [{"id": "n0", "capacity": [4, 8]}],
            "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 1}]}"#,
        InstanceError::WrongLength {
            kind: "job",
            id: "a".into(),
            field: "demand",
            expected: 2,
            found: 1,
        },
        &["\"a\"", "`demand`", "2", "1"],
    );
    rejects(
        r#"{"now": 0, "resources": ["cores", "mem"],
            "servers": [{"id": "n0", "capacity": [4, 8, 1]}],
            "queue": [{"id": "a", "submit": 0, "demand": [1, 1], "walltime": 1}]}"#,
        InstanceError::WrongLength {
            kind: "server",
            id: "n0".into(),
            field: "capacity",
            expected: 2,
            found: 3,
        },
        &["server \"n0\"", "`capacity`"],
    );
}

#[test]
fn negative_amount() {
    rejects(
        r#"{"now": 0, "resources": ["cores", "mem"],
            "servers": [{"id": "n0", "capacity": [4, 8]}],
            "running": [{"id": "r", "server": "n0", "demand": [1, -3], "end": 5}],
            "queue": [{"id": "a", "submit": 0, "demand": [1, 1], "walltime": 1}]}"#,
        InstanceError::NegativeAmount {
            kind: "running job",
            id: "r".into(),
            field: "demand",
            index: 1,
            value: -3,
        },
        &["running job \"r\"", "`demand[1]`", "-3"],
    );
}

#[test]
fn out_of_range() {
    let too_big = MAX_MAGNITUDE + 1;
    rejects(
        &format!(
            r#"{{"now": 0, "resources": ["cores"],
                "servers": [{{"id": "n0", "capacity": [{too_big}]}}],
                "queue": [{{"id": "a", "submit": 0, "demand": [1], "walltime": 1}}]}}"#
        ),
        InstanceError::OutOfRange {
            kind: "server",
            id: "n0".into(),
            field: "capacity",
            value: too_big,
        },
        &["server \"n0\"", "`capacity`"],
    );
    rejects(
        &format!(
            r#"{{"now": 0, "resources": ["cores"],
                "servers": [{{"id": "n0", "capacity": [1]}}],
                "queue": [{{"id": "a", "submit": 0, "demand": [1], "walltime": {too_big}}}]}}"#
        ),
        InstanceError::OutOfRange {
            kind: "job",
            id: "a".into(),
            field: "walltime",
            value: too_big,
        },
        &["job \"a\"", "`walltime`", "[1, 2^40]"],
    );
    rejects(
        &format!(
            r#"{{"now": {too_big}, "resources": ["cores"],
                "servers": [{{"id": "n0", "capacity": [1]}}],
                "queue": [{{"id": "a", "submit": 0, "demand": [1], "walltime": 1}}]}}"#
        ),
        InstanceError::OutOfRange {
            kind: "instance",
            id: String::new(),
            field: "now",
            value: too_big,
        },
        &["the instance: `now`", "[-2^40, 2^40]"],
    );
}

#[test]
fn huge_running_demands_are_reported_not_overflowed() {
    // Two running jobs of 2^62 each on one server: their sum does not fit in i64. The instance
    // must be rejected with errors, not panic on overflow while checking the capacity.
    let big = 1i64 << 62;
    let instance = parse(&format!(
        r#"{{"now": 0, "resources": ["cores"],
            "servers": [{{"id": "n0", "capacity": [1]}}],
            "running": [{{"id": "r1", "server": "n0", "demand": [{big}], "end": 5}},
                        {{"id": "r2", "server": "n0", "demand": [{big}], "end": 5}}],
            "queue": [{{"id": "a", "submit": 0, "demand": [1], "walltime": 1}}]}}"#
    ));
    let out_of_range = |id: &str| InstanceError::OutOfRange {
        kind: "running job",
        id: id.into(),
        field: "demand",
        value: big,
    };
    assert_eq!(
        problems(&instance),
        vec![
            out_of_range("r1"),
            out_of_range("r2"),
            // The sum saturates instead of wrapping around to a negative number.
            InstanceError::ServerOverloaded {
                server: "n0".into(),
                resource: "cores".into(),
                used: i64::MAX,
                capacity: 1,
            },
        ]
    );
}

#[test]
fn walltime_too_short() {
    rejects(
        r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [1]}],
            "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 0}]}"#,
        InstanceError::WalltimeTooShort {
            job: "a".into(),
            walltime: 0,
        },
        &["job \"a\"", "`walltime`"],
    );
}

#[test]
fn negative_runtime() {
    rejects(
        r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [1]}],
            "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 5, "runtime": -1}]}"#,
        InstanceError::NegativeRuntime {
            job: "a".into(),
            runtime: -1,
        },
        &["job \"a\"", "`runtime`"],
    );
}

#[test]
fn submit_after_now() {
    rejects(
        r#"{"now": 100, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [1]}],
            "queue": [{"id": "a", "submit": 100, "demand": [1], "walltime": 5},
                      {"id": "b", "submit": 101, "demand": [1], "walltime": 5}]}"#,
        InstanceError::SubmitAfterNow {
            job: "b".into(),
            submit: 101,
            now: 100,
        },
        &["job \"b\"", "`submit`", "101"],
    );
}

#[test]
fn end_not_after_now() {
    // end == now is already invalid: a running job must end after the snapshot.
    rejects(
        r#"{"now": 100, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [1]}],
            "running": [{"id": "r", "server": "n0", "demand": [1], "end": 100}],
            "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 5}]}"#,
        InstanceError::EndNotAfterNow {
            job: "r".into(),
            end: 100,
            now: 100,
        },
        &["running job \"r\"", "`end`"],
    );
}

#[test]
fn bad_weight() {
    rejects(
        r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [1]}],
            "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 5, "weight": 0}]}"#,
        InstanceError::BadWeight {
            job: "a".into(),
            weight: 0.0,
        },
        &["job \"a\"", "`weight`"],
    );
    rejects(
        r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [1]}],
            "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 5, "weight": -2.5}]}"#,
        InstanceError::BadWeight {
            job: "a".into(),
            weight: -2.5,
        },
        &["job \"a\"", "`weight`"],
    );
}

#[test]
fn unknown_server() {
    rejects(
        r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [1]}],
            "running": [{"id": "r", "server": "n9", "demand": [1], "end": 5}],
            "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 5}]}"#,
        InstanceError::UnknownServer {
            job: "r".into(),
            server: "n9".into(),
        },
        &["running job \"r\"", "`server`", "\"n9\""],
    );
    // A running job's server must be a server, not another job.
    rejects(
        r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [1]}],
            "running": [{"id": "r", "server": "a", "demand": [1], "end": 5}],
            "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 5}]}"#,
        InstanceError::UnknownServer {
            job: "r".into(),
            server: "a".into(),
        },
        &["\"r\""],
    );
}

#[test]
fn unknown_dependency() {
    rejects(
        r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [1]}],
            "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 5, "deps": ["ghost"]}]}"#,
        InstanceError::UnknownDependency {
            job: "a".into(),
            dep: "ghost".into(),
        },
        &["job \"a\"", "`deps`", "\"ghost\""],
    );
    // A server is not a job one can depend on.
    rejects(
        r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [1]}],
            "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 5, "deps": ["n0"]}]}"#,
        InstanceError::UnknownDependency {
            job: "a".into(),
            dep: "n0".into(),
        },
        &["job \"a\"", "`deps`"],
    );
}

#[test]
fn dependency_cycle() {
    // a -> b -> c -> b: the walk from a (first in queue order, behind the cycle) finds b, c.
    rejects(
        r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [1]}],
            "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 5, "deps": ["b"]},
                      {"id": "b", "submit": 0, "demand": [1], "walltime": 5, "deps": ["c"]},
                      {"id": "c", "submit": 0, "demand": [1], "walltime": 5, "deps": ["b"]}]}"#,
        InstanceError::DependencyCycle {
            job: "b".into(),
            cycle: vec!["b".into(), "c".into(), "b".into()],
        },
        &["job \"b\"", "`deps`", "\"b\" -> \"c\" -> \"b\""],
    );
    // A job that depends on itself.
    rejects(
        r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [1]}],
            "queue": [{"id": "a", "submit": 0, "demand": [1], "walltime": 5, "deps": ["a"]}]}"#,
        InstanceError::DependencyCycle {
            job: "a".into(),
            cycle: vec!["a".into(), "a".into()],
        },
        &["job \"a\"", "`deps`"],
    );
}

#[test]
fn fits_no_server() {
    // 8 cores fit n0 only, 2 gpus fit n1 only: each server lacks something.
    rejects(
        r#"{"now": 0, "resources": ["cores", "gpus"],
            "servers": [{"id": "n0", "capacity": [8, 1]}, {"id": "n1", "capacity": [4, 2]}],
            "queue": [{"id": "ok", "submit": 0, "demand": [4, 1], "walltime": 5},
                      {"id": "a", "submit": 0, "demand": [8, 2], "walltime": 5}]}"#,
        InstanceError::FitsNoServer {
            job: "a".into(),
            demand: vec![8, 2],
        },
        &["job \"a\"", "`demand`"],
    );
}

#[test]
fn server_overloaded() {
    // r1 + r2 use 5 of n0's 4 cores (memory 8 of 16 is fine); r3 fits n1.
    rejects(
        r#"{"now": 0, "resources": ["cores", "mem"],
            "servers": [{"id": "n0", "capacity": [4, 16]}, {"id": "n1", "capacity": [8, 8]}],
            "running": [{"id": "r1", "server": "n0", "demand": [3, 4], "end": 5},
                        {"id": "r2", "server": "n0", "demand": [2, 4], "end": 6},
                        {"id": "r3", "server": "n1", "demand": [2, 4], "end": 6}],
            "queue": [{"id": "a", "submit": 0, "demand": [1, 1], "walltime": 5}]}"#,
        InstanceError::ServerOverloaded {
            server: "n0".into(),
            resource: "cores".into(),
            used: 5,
            capacity: 4,
        },
        &["server \"n0\"", "resource \"cores\"", "`capacity`"],
    );
}

#[test]
fn problems_reports_several_errors_at_once() {
    let instance = parse(
        r#"{"now": 100, "resources": ["cores"],
            "servers": [{"id": "n0", "capacity": [4]}],
            "running": [{"id": "r", "server": "nX", "demand": [1], "end": 200}],
            "queue": [{"id": "a", "submit": 150, "demand": [1], "walltime": 5},
                      {"id": "b", "submit": 0, "demand": [1], "walltime": 0},
                      {"id": "c", "submit": 0, "demand": [9], "walltime": 5, "deps": ["zz"]}]}"#,
    );
    let all = problems(&instance);
    assert_eq!(
        all,
        vec![
            InstanceError::SubmitAfterNow {
                job: "a".into(),
                submit: 150,
                now: 100
            },
            InstanceError::WalltimeTooShort {
                job: "b".into(),
                walltime: 0
            },
            InstanceError::UnknownServer {
                job: "r".into(),
                server: "nX".into()
            },
            InstanceError::UnknownDependency {
                job: "c".into(),
                dep: "zz".into()
            },
            InstanceError::FitsNoServer {
                job: "c".into(),
                demand: vec![9]
            },
        ]
    );
    // `validate` reports the first of them.
    assert_eq!(validate(&instance), Err(all[0].clone()));
}

#[test]
fn parse_valid_names_the_schema_error_or_every_problem() {
    assert!(schedlm_model::parse_valid(VALID).is_ok());
    let err = schedlm_model::parse_valid("{\"now\": \"x\"}").unwrap_err();
    assert!(err.starts_with("not an instance: "), "{err}");
    let two = r#"{"now": 0, "resources": ["cores"], "servers": [{"id": "n0", "capacity": [1]}],
        "queue": [{"id": "a", "submit": 5, "demand": [1], "walltime": 0}]}"#;
    let err = schedlm_model::parse_valid(two).unwrap_err();
    assert_eq!(err.matches("job \"a\"").count(), 2, "{err}");
    assert!(err.contains("; "), "{err}");
}

/// Ids in messages are bounded and escaped (docs/design.md): a 5 MB id is quoted as 80
/// characters and its length, ESC and BEL as escapes, and a long cycle by its first ids.
#[test]
fn ids_in_messages_are_bounded_and_escaped() {
    let huge = "y".repeat(5 << 20);
    let text = format!(
        r#"{{"now": 0, "resources": ["cores"], "servers": [{{"id": "n0", "capacity": [1]}}],
            "queue": [{{"id": "{huge}", "submit": 0, "demand": [1], "walltime": 0}},
                      {{"id": "e\u001b[2J\u0007", "submit": 0, "demand": [1], "walltime": 1,
                        "deps": ["x\u001b"]}}]}}"#
    );
    let err = schedlm_model::parse_valid(&text).unwrap_err();
    assert!(err.len() < 500, "{} bytes", err.len());
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err}");
    assert!(
        err.contains(&format!("…\" ({} bytes): `walltime` is 0", 5 << 20)),
        "{err}"
    );
    assert!(
        err.contains("job \"e\\u{1b}[2J\\u{7}\": `deps` names \"x\\u{1b}\""),
        "{err}"
    );

    // A cycle through 1,000 jobs lists 12 ids.
    let n = 1000;
    let jobs: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"id": "j{i}", "submit": 0, "demand": [1], "walltime": 1, "deps": ["j{}"]}}"#,
                (i + 1) % n
            )
        })
        .collect();
    let text = format!(
        r#"{{"now": 0, "resources": ["cores"], "servers": [{{"id": "n0", "capacity": [1]}}],
            "queue": [{}]}}"#,
        jobs.join(",")
    );
    let err = schedlm_model::parse_valid(&text).unwrap_err();
    assert!(err.len() < 300, "{err}");
    assert!(err.contains("-> … (1000 jobs) -> \"j0\""), "{err}");
}
