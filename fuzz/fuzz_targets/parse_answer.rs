//! Fuzzes the answer parser: any bytes as a model's reply, both modes; see
//! `schedlm_dataset::fuzzing`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    schedlm_dataset::fuzzing::parse_answer_harness(data);
});
