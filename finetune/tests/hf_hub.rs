//! `hf:ORG/NAME` finds a model in the hf-hub cache (`$HF_HOME/hub/models--ORG--NAME`, the
//! snapshot `refs/main` names), offline. Its own test binary: it sets environment variables.

#[path = "common/tiny_llama.rs"]
mod tiny_llama;

use candle_core::Device;
use candle_nn::VarMap;
use schedlm_finetune::model::Base;
use schedlm_finetune::pretrained::hub_snapshot;

use tiny_llama::{config, llama, logits, tokenizer, weights, write_hf};

#[test]
fn hub_cache_lookup_by_model_id() {
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("hub/models--schedlm-test--tiny-llama");
    let revision = "0123456789abcdef0123456789abcdef01234567";
    let snapshot = repo.join("snapshots").join(revision);
    let tok = tokenizer();
    let c = config(tok.vocab_size(), true);
    let w = weights(&c);
    write_hf(&snapshot, &c, &w, &tok);
    // Another revision that refs/main does not name.
    write_hf(
        &repo.join("snapshots/ffffffffffffffffffffffffffffffffffffffff"),
        &c,
        &weights(&c),
        &tok,
    );
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    // As huggingface_hub writes refs: the commit hash, no newline.
    std::fs::write(repo.join("refs/main"), revision).unwrap();

    std::env::remove_var("HF_HUB_CACHE");
    std::env::set_var("HF_HOME", home.path());
    assert_eq!(hub_snapshot("schedlm-test/tiny-llama").unwrap(), snapshot);
    let err = hub_snapshot("schedlm-test/absent").unwrap_err().to_string();
    assert!(
        err.contains("huggingface-cli download schedlm-test/absent"),
        "{err}"
    );
    // A revision: a commit hash names its snapshot, a branch without a ref is not there.
    let other = "ffffffffffffffffffffffffffffffffffffffff";
    assert_eq!(
        hub_snapshot(&format!("schedlm-test/tiny-llama@{other}")).unwrap(),
        repo.join("snapshots").join(other)
    );
    assert!(hub_snapshot("schedlm-test/tiny-llama@dev").is_err());

    let p = Base::Hf("schedlm-test/tiny-llama".into())
        .load(&Device::Cpu)
        .unwrap();
    assert_eq!(p.config, c);
    let ids = tok.encode("J1 J2 J3").unwrap();
    assert_eq!(
        logits(&llama(&p.config, &p.weights, None, &VarMap::new()), &ids),
        logits(&llama(&c, &w, None, &VarMap::new()), &ids)
    );

    // $HF_HUB_CACHE takes precedence over $HF_HOME.
    let other = tempfile::tempdir().unwrap();
    std::env::set_var("HF_HUB_CACHE", other.path());
    assert!(Base::Hf("schedlm-test/tiny-llama".into())
        .load(&Device::Cpu)
        .is_err());
    std::env::set_var("HF_HUB_CACHE", home.path().join("hub"));
    assert_eq!(hub_snapshot("schedlm-test/tiny-llama").unwrap(), snapshot);
}
