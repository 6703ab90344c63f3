//! Language models for schedlm: a small GPT trained from scratch and LoRA fine-tuning of a
//! pretrained model, with candle; constrained decoding of valid queue orders.
