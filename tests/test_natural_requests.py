"""Jobs as people describe them (issue 25): each natural request and the job it must resolve to.

A preset plus "N samples of L tokens", counts written ``7e9`` or ``"7B"``, a preset with two or
three fields changed, a Hugging Face ``config.json``, a rental listing's GPU label: every row
is one ``POST /v1/estimate`` and either the job it must be about (epoch tokens, heads,
kv_heads, GPU, VRAM, parameters, warnings) or the 400 it must get (the field named, why).
Expected figures are worked out by hand in the comments (shapes: app/model/shape.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.db

H100 = {"gpu": "H100 SXM"}
RESNET = {"preset": "resnet50-imagenet"}
#: a decoder without a preset, as a user states it
CUSTOM = {
    "architecture": "transformer_decoder",
    "params": 6_740_512_768,
    "layers": 32,
    "hidden_size": 4096,
    "heads": 32,
    "seq_len": 2048,
}
#: the issue's headline job: Llama 3 8B QLoRA, 50,000 samples of 512 tokens, 3 epochs
QLORA_50K = {
    "preset": "llama3-8b-qlora",
    "seq_len": 512,
    "micro_batch_size": 8,
    "samples_per_epoch": 50_000,
    "epochs": 3,
}

# (case id, workload, hardware, what the answer must be). Keys of the expectation:
# status (default 200); key / says: the 400's field and a phrase of its reason;
# tokens: epoch_tokens; samples: epoch_samples; heads, kv_heads, params, ffn: the resolved
# workload; gpu, vram: the resolved hardware; warn / no_warn: warning codes; note: a phrase
# of one of the notes; defines: a phrase of the epoch definition.
CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    # --- the epoch: "N samples of L tokens" ---------------------------------------------
    # the issue's job: 50,000 × 512 = 25,600,000 tokens (not Alpaca's 92.4-token rows)
    (
        "qlora 50k samples of 512",
        QLORA_50K,
        {"gpu": "RTX 4090"},
        {"tokens": 25_600_000, "warn": "epoch_tokens_padded", "defines": "50,000 samples"},
    ),
    (
        "qlora 50k as text",
        {**QLORA_50K, "samples_per_epoch": "50k"},
        {"gpu": "RTX 4090"},
        {"tokens": 25_600_000, "samples": 50_000},
    ),
    # tokens per sample given: packed, 50,000 × 92.4 = 4,620,000, nothing assumed
    (
        "qlora 50k with tokens per sample",
        {**QLORA_50K, "tokens_per_sample": 92.4},
        {"gpu": "RTX 4090"},
        {"tokens": 4_620_000, "no_warn": "epoch_tokens_padded", "defines": "packed"},
    ),
    (
        "lora 100k samples of 1024",
        {"preset": "llama3-8b-lora", "samples_per_epoch": "100k", "seq_len": 1024},
        H100,
        {"tokens": 102_400_000, "heads": 32, "kv_heads": 8},
    ),
    # the preset's own, sourced Alpaca count: 51,760 rows × 92.4 = 4,782,624 tokens
    ("lora preset as is", {"preset": "llama3-8b-lora"}, H100, {"tokens": 4_782_624}),
    # a longer seq_len alone keeps the preset's dataset, packed into fewer sequences
    (
        "lora seq 4096 keeps the dataset",
        {"preset": "llama3-8b-lora", "seq_len": 4096},
        H100,
        {"tokens": 4_782_624, "samples": 4_782_624 / 4096},
    ),
    # GPT-2 on OpenWebText: samples are whole 1,024-token windows, exact without a warning
    (
        "gpt2 pretrain 9,765,625 windows",
        {"preset": "gpt2-124m-pretrain", "samples_per_epoch": 9_765_625},
        H100,
        {"tokens": 10_000_000_000, "no_warn": "epoch_tokens_padded"},
    ),
    # SQuAD features are padded to 384 by the script: 10,000 × 384
    (
        "bert squad 10k padded",
        {"preset": "bert-base-squad", "samples_per_epoch": 10_000},
        H100,
        {"tokens": 3_840_000, "no_warn": "epoch_tokens_padded", "defines": "padded"},
    ),
    (
        "custom decoder 2,138,256 samples of 1,024",
        {**CUSTOM, "seq_len": 1024, "samples_per_epoch": 2_138_256},
        H100,
        {"tokens": 2_189_574_144, "heads": 32, "kv_heads": 32, "warn": "epoch_tokens_padded"},
    ),
    # without a preset, a token count alone is the epoch: 1e8 / 2,048 sequences
    (
        "custom decoder tokens alone",
        {**CUSTOM, "tokens_per_epoch": "100M"},
        H100,
        {"tokens": 100_000_000, "samples": 100_000_000 / 2048, "defines": "packed"},
    ),
    (
        "pretrain preset with tokens alone",
        {"preset": "llama31-8b-pretrain", "tokens_per_epoch": "1B"},
        H100,
        {"tokens": 1_000_000_000, "samples": 1e9 / 8192},
    ),
    (
        "tokens as an integral float",
        {**CUSTOM, "tokens_per_epoch": 1e8},
        H100,
        {"tokens": 100_000_000},
    ),
    # 200M real tokens cannot sit in 51,760 samples padded to 2,048 (106,004,480 slots)
    (
        "padded samples too few for the tokens",
        {"preset": "llama3-8b-lora", "tokens_per_epoch": "200M", "packed": False},
        H100,
        {"status": 400, "key": "workload.tokens_per_epoch", "says": "106,004,480 slots"},
    ),
    # 50,000 × 92.4 = 4,620,000, not 9,000,000
    (
        "tokens per sample contradicting tokens per epoch",
        {**QLORA_50K, "tokens_per_sample": 92.4, "tokens_per_epoch": 9_000_000},
        {"gpu": "RTX 4090"},
        {"status": 400, "key": "workload.tokens_per_sample", "says": "4,620,000"},
    ),
    (
        "tokens per sample without samples",
        {**CUSTOM, "tokens_per_sample": 500},
        H100,
        {"status": 400, "key": "workload.samples_per_epoch", "says": "required"},
    ),
    (
        "custom decoder without any epoch count",
        CUSTOM,
        H100,
        {"status": 400, "key": "workload.samples_per_epoch", "says": "required"},
    ),
    (
        "tokens on an image model",
        {**RESNET, "tokens_per_epoch": 1000},
        H100,
        {"status": 400, "key": "workload.tokens_per_epoch", "says": "token workloads"},
    ),
    # --- counts as people write them ----------------------------------------------------
    ("params 7e9", {**CUSTOM, "params": 7e9, "tokens_per_epoch": 10**8}, H100, {"params": 7e9}),
    ("params '7B'", {**CUSTOM, "params": "7B", "tokens_per_epoch": 10**8}, H100, {"params": 7e9}),
    (
        "params '6.74 B'",
        {**CUSTOM, "params": "6.74 B", "tokens_per_epoch": 10**8},
        H100,
        {"params": 6_740_000_000},
    ),
    (
        "samples '1.5M'",
        {**RESNET, "samples_per_epoch": "1.5M"},
        H100,
        {"samples": 1_500_000},
    ),
    (
        "samples '1,281,167'",
        {**RESNET, "samples_per_epoch": "1,281,167"},
        H100,
        {"samples": 1_281_167},
    ),
    # sequence lengths as people write them: k is 1024 there (4k = 4096), so 50,000 samples
    # padded to "4k" are 50,000 × 4,096 = 204,800,000 tokens (not 50,000 × 4,000)
    (
        "qlora seq_len '4k'",
        {**QLORA_50K, "seq_len": "4k"},
        {"gpu": "RTX 4090"},
        {"tokens": 204_800_000, "samples": 50_000},
    ),
    (
        "seq_len '32k' is 32768",
        {**QLORA_50K, "seq_len": "32k"},
        H100,
        {"same_as": {**QLORA_50K, "seq_len": 32768}},
    ),
    # 50,000 × 8,192 = 409,600,000
    ("qlora seq_len '8K'", {**QLORA_50K, "seq_len": "8K"}, H100, {"tokens": 409_600_000}),
    # 50,000 × 2,048 = 102,400,000: the digits as text
    ("qlora seq_len '2048'", {**QLORA_50K, "seq_len": "2048"}, H100, {"tokens": 102_400_000}),
    # 50,000 × 1,536 = 76,800,000
    ("qlora seq_len '1.5k'", {**QLORA_50K, "seq_len": "1.5k"}, H100, {"tokens": 76_800_000}),
    (
        "seq_len in words",
        {**QLORA_50K, "seq_len": "four k"},
        H100,
        {"status": 400, "key": "workload.seq_len", "says": "a length in tokens: 2048, 4k"},
    ),
    # 4.1 × 1024 = 4198.4 tokens
    (
        "seq_len '4.1k' is not whole",
        {**QLORA_50K, "seq_len": "4.1k"},
        H100,
        {"status": 400, "key": "workload.seq_len", "says": "whole number of tokens"},
    ),
    # a count's B is no sequence length
    (
        "seq_len '1B'",
        {**QLORA_50K, "seq_len": "1B"},
        H100,
        {"status": 400, "key": "workload.seq_len", "says": "a length in tokens"},
    ),
    (
        "params 7.5 is no count",
        {**CUSTOM, "params": 7.5},
        H100,
        {"status": 400, "key": "workload.params", "says": "whole number"},
    ),
    (
        "samples '2.5' is no count",
        {**RESNET, "samples_per_epoch": "2.5"},
        H100,
        {"status": 400, "key": "workload.samples_per_epoch", "says": "whole number"},
    ),
    (
        "params in words",
        {**CUSTOM, "params": "seven billion"},
        H100,
        {"status": 400, "key": "workload.params", "says": "a count"},
    ),
    (
        "params 0",
        {**CUSTOM, "params": 0},
        H100,
        {"status": 400, "key": "workload.params", "says": "greater than 0"},
    ),
    # encoders cached or offloaded: nothing of them on the GPU
    (
        "text encoder 0",
        {"preset": "sd15-unet-finetune", "text_encoder_params": 0, "vae_params": "83.65M"},
        {"gpu": "A100 SXM4 80GB"},
        {"text_encoder_gib": 0.0},
    ),
    (
        "vae 0",
        {"preset": "sd15-unet-finetune", "text_encoder_params": "123M", "vae_params": 0},
        {"gpu": "A100 SXM4 80GB"},
        {"vae_gib": 0.0},
    ),
    # --- a preset with two or three fields changed --------------------------------------
    # BERT-large from BERT-base: kv_heads follows heads (16), the MLP its 4x ratio (4096)
    (
        "bert-large from bert-base",
        {
            "preset": "bert-base-squad",
            "layers": 24,
            "hidden_size": 1024,
            "heads": 16,
            "params": 335_000_000,
        },
        {"gpu": "V100 SXM2 16GB"},
        {"heads": 16, "kv_heads": 16, "ffn": 4096, "params": 335_000_000, "note": "kv_heads 12"},
    ),
    # heads from the preset's head size 64; params = 109,483,778 + the blocks' growth (the
    # token table is lookup-only and kept): 24 x (4·1024² + 2·1024·4096) - 12 x (4·768² +
    # 2·768·3072) = 301,989,888 - 84,934,656
    (
        "bert-base made 24 x 1024",
        {"preset": "bert-base-squad", "layers": 24, "hidden_size": 1024},
        {"gpu": "V100 SXM2 16GB"},
        {"heads": 16, "kv_heads": 16, "ffn": 4096, "params": 326_539_010, "note": "head size"},
    ),
    # GPT-2 medium's shape: 124,373,760 + (353,501,184 - 123,568,128), vocabulary 50,304
    (
        "gpt2 made 24 x 1024",
        {"preset": "gpt2-124m-pretrain", "layers": 24, "hidden_size": 1024},
        H100,
        {"heads": 16, "kv_heads": 16, "params": 354_306_816},
    ),
    # multi-head: kv_heads follows heads (768 / 16 = 48-wide heads)
    (
        "gpt2 with 16 heads",
        {"preset": "gpt2-124m-pretrain", "heads": 16},
        H100,
        {"heads": 16, "kv_heads": 16, "params": 124_373_760},
    ),
    # grouped-query: the 8 key/value heads divide 64; k and v shrink to 64-wide heads:
    # 8,030,261,248 - 32 x 2·4096·8·(128 - 64) = 7,896,043,520
    (
        "llama 64 heads",
        {"preset": "llama3-8b-lora", "heads": 64},
        H100,
        {"heads": 64, "kv_heads": 8, "params": 7_896_043_520},
    ),
    # 8,030,261,248 + 32 x 2·4096·8·(256 - 128) = 8,298,696,704
    (
        "llama 16 heads",
        {"preset": "llama3-8b-lora", "heads": 16},
        H100,
        {"heads": 16, "kv_heads": 8, "params": 8_298_696_704},
    ),
    (
        "llama 64 heads 16 kv",
        {"preset": "llama3-8b-lora", "heads": 64, "kv_heads": 16},
        H100,
        {"heads": 64, "kv_heads": 16},
    ),
    # half the layers: 16 x 218,103,808 fewer (attention 41,943,040 + MLP 176,160,768)
    (
        "llama 16 layers",
        {"preset": "llama3-8b-lora", "layers": 16},
        H100,
        {"params": 4_540_600_320, "note": "params 8,030,261,248"},
    ),
    (
        "llama 3 fields",
        {"preset": "llama3-8b-qlora", "lora_rank": 64, "seq_len": 1024, "micro_batch_size": 4},
        H100,
        {"heads": 32, "kv_heads": 8, "params": 8_030_261_248, "tokens": 4_782_624},
    ),
    # ViT-L's shape from ViT-B/16: 64-wide heads
    (
        "vit-b made 24 x 1024",
        {"preset": "vit-b16-imagenet", "layers": 24, "hidden_size": 1024},
        H100,
        {"heads": 16, "kv_heads": 16, "ffn": 4096},
    ),
    (
        "llama 12 heads",
        {"preset": "llama3-8b-lora", "heads": 12},
        H100,
        {"status": 400, "key": "workload.heads", "says": "not divisible by 12 heads"},
    ),
    (
        "llama 5 kv heads",
        {"preset": "llama3-8b-lora", "kv_heads": 5},
        H100,
        {"status": 400, "key": "workload.kv_heads", "says": "not divisible by 5"},
    ),
    (
        "bert hidden 1000",
        {"preset": "bert-base-squad", "hidden_size": 1000},
        H100,
        {"status": 400, "key": "workload.hidden_size", "says": "head size 64"},
    ),
    # --- fields that do not apply: ignored with a note, every figure unchanged ----------
    (
        "lora on resnet-50",
        {**RESNET, "method": "lora"},
        H100,
        {"same_as": RESNET, "note": "method lora ignored"},
    ),
    (
        "qlora rank 16 on resnet-50",
        {**RESNET, "method": "qlora", "lora_rank": 16},
        H100,
        {"same_as": RESNET, "note": "lora_rank 16 ignored"},
    ),
    (
        "lora rank with full",
        {"preset": "llama3-8b-full", "lora_rank": 64},
        H100,
        {"same_as": {"preset": "llama3-8b-full"}, "note": "lora_rank 64 ignored"},
    ),
    # --- unknown fields name the one meant ----------------------------------------------
    (
        "ram_gb",
        RESNET,
        {"gpu": "T4", "ram_gb": 64},
        {"status": 400, "key": "hardware.ram_gb", "says": "did you mean ram_gib?"},
    ),
    (
        "seqlen",
        {**RESNET, "seqlen": 512},
        H100,
        {"status": 400, "key": "workload.seqlen", "says": "did you mean seq_len?"},
    ),
    (
        "sample_per_epoch",
        {**RESNET, "sample_per_epoch": 5},
        H100,
        {"status": 400, "key": "workload.sample_per_epoch", "says": "samples_per_epoch?"},
    ),
    (
        "a field like none",
        {**RESNET, "zzz": 1},
        H100,
        {"status": 400, "key": "workload.zzz", "says": "unknown field"},
    ),
    # --- the frozen base's dtype as people write it ---------------------------------------
    # from_pretrained(torch_dtype=torch.bfloat16): the same job as bf16, figure for figure
    (
        "base torch.bfloat16",
        {"preset": "llama3-8b-lora", "base_dtype": "torch.bfloat16"},
        {"gpu": "RTX 4090"},
        {"same_as": {"preset": "llama3-8b-lora", "base_dtype": "bf16"}},
    ),
    (
        "base torch.float16",
        {"preset": "llama3-8b-lora", "base_dtype": "torch.float16"},
        {"gpu": "RTX 4090"},
        {"same_as": {"preset": "llama3-8b-lora", "base_dtype": "fp16"}},
    ),
    (
        "base torch.float32",
        {"preset": "llama3-8b-lora", "base_dtype": "torch.float32"},
        H100,
        {"same_as": {"preset": "llama3-8b-lora", "base_dtype": "fp32"}},
    ),
    # the paper's name for bitsandbytes' 8-bit matmul (Dettmers et al., arXiv:2208.07339)
    (
        "base LLM.int8()",
        {"preset": "llama3-8b-lora", "base_dtype": "LLM.int8()"},
        {"gpu": "RTX 4090"},
        {"same_as": {"preset": "llama3-8b-lora", "base_dtype": "int8"}},
    ),
    # int4 is no bitsandbytes format (its 4-bit types are fp4, the default of
    # load_in_4bit, and nf4) but torchao's or GPTQ/AWQ's group-wise int4: refused, the
    # choices named
    (
        "base int4",
        {"preset": "llama3-8b-lora", "base_dtype": "int4"},
        {"gpu": "RTX 4090"},
        {"status": 400, "key": "workload.base_dtype", "says": "'int8' or 'nf4'"},
    ),
    # --- optimizer, attention and quantisation library in Hugging Face's words ----------
    # TrainingArguments(optim="adamw_torch"): AdamW's two fp32 moments, not the preset's
    # paged 8-bit states
    (
        "optim adamw_torch",
        {"preset": "llama3-8b-qlora", "optimizer": "adamw_torch"},
        H100,
        {"same_as": {"preset": "llama3-8b-qlora", "optimizer": "adamw"}},
    ),
    (
        "optim adamw_bnb_8bit",
        {"preset": "llama3-8b-lora", "optimizer": "adamw_bnb_8bit"},
        H100,
        {"same_as": {"preset": "llama3-8b-lora", "optimizer": "adamw_8bit"}},
    ),
    # from_pretrained(attn_implementation="flash_attention_2"): no s×s scores, as sdpa
    (
        "attn flash_attention_2",
        {"preset": "bert-base-squad", "attention": "flash_attention_2"},
        H100,
        {"same_as": {"preset": "bert-base-squad", "attention": "sdpa"}},
    ),
    (
        "quant backend bnb",
        {"preset": "llama3-8b-qlora", "quant_backend": "bnb"},
        H100,
        {"same_as": {"preset": "llama3-8b-qlora", "quant_backend": "bitsandbytes"}},
    ),
    # --- the training stack by the names people use (app/model/stacks.py STACK_ALIASES) ---
    # Composer is llm-foundry's trainer: a tuned stack, faster than the preset's torchtune
    (
        "stack composer",
        {"preset": "llama3-8b-lora", "stack": "composer"},
        H100,
        {"same_as": {"preset": "llama3-8b-lora", "stack": "llm_foundry"}},
    ),
    (
        "stack HF Trainer",
        {"preset": "llama3-8b-lora", "stack": "HF Trainer"},
        H100,
        {"same_as": {"preset": "llama3-8b-lora", "stack": "hf_trainer"}},
    ),
    (
        "stack in words",
        {"preset": "llama3-8b-lora", "stack": "my own loop"},
        H100,
        {"status": 400, "key": "workload.stack", "says": "'hf_trainer'"},
    ),
    # --- CUDA-only libraries on ROCm ------------------------------------------------------
    (
        "qlora on an MI300X",
        {"preset": "llama3-8b-qlora"},
        {"gpu": "MI300X"},
        {"gpu": "Instinct MI300X", "vram": 192, "warn": "cuda_only_library"},
    ),
    (
        "8-bit adam on an MI300X",
        {"preset": "llama3-8b-lora", "optimizer": "adamw_8bit"},
        {"gpu": "MI300X"},
        {"warn": "cuda_only_library"},
    ),
    (
        "qlora on an H100",
        {"preset": "llama3-8b-qlora"},
        H100,
        {"gpu": "H100 SXM 80GB", "no_warn": "cuda_only_library"},
    ),
    # --- GPU labels as rental listings write them -----------------------------------------
    ("3090-24G", RESNET, {"gpu": "3090-24G"}, {"gpu": "GeForce RTX 3090", "vram": 24}),
    ("4090-24G", RESNET, {"gpu": "4090-24G"}, {"gpu": "GeForce RTX 4090", "vram": 24}),
    ("4090D-24G", RESNET, {"gpu": "4090D-24G"}, {"gpu": "GeForce RTX 4090 D", "vram": 24}),
    # a 48 GB memory-modified RTX 4090 (rented on Vast; seed_data/gpu_aliases.csv)
    ("4090-48G", RESNET, {"gpu": "4090-48G"}, {"gpu": "GeForce RTX 4090", "vram": 48}),
    (
        "Vast's 48 GB 4090",
        RESNET,
        {"gpu": "RTX 4090 (48 GB variant)"},
        {"gpu": "GeForce RTX 4090", "vram": 48},
    ),
    ("3080-20G", RESNET, {"gpu": "3080-20G"}, {"gpu": "GeForce RTX 3080 10GB", "vram": 20}),
    ("3080-10G", RESNET, {"gpu": "3080-10G"}, {"gpu": "GeForce RTX 3080 10GB", "vram": 10}),
    ("2080 Ti-22G", RESNET, {"gpu": "2080 Ti-22G"}, {"gpu": "GeForce RTX 2080 Ti", "vram": 22}),
    ("3060-12G", RESNET, {"gpu": "3060-12G"}, {"gpu": "GeForce RTX 3060 12GB", "vram": 12}),
    (
        "4060 Ti-16G",
        RESNET,
        {"gpu": "4060 Ti-16G"},
        {"gpu": "GeForce RTX 4060 Ti 16GB", "vram": 16},
    ),
    ("5090-32G", RESNET, {"gpu": "5090-32G"}, {"gpu": "GeForce RTX 5090", "vram": 32}),
    (
        "PRO 6000-96G",
        RESNET,
        {"gpu": "PRO 6000-96G"},
        {"gpu": "RTX PRO 6000 Blackwell 96GB", "vram": 96},
    ),
    ("5880Ada-48G", RESNET, {"gpu": "5880Ada-48G"}, {"gpu": "RTX 5880 Ada", "vram": 48}),
    ("L40S-48GB", RESNET, {"gpu": "L40S-48GB"}, {"gpu": "L40S", "vram": 48}),
    ("T4-16G", RESNET, {"gpu": "T4-16G"}, {"gpu": "T4", "vram": 16}),
    ("V100 32GB SXM2", RESNET, {"gpu": "V100 32GB SXM2"}, {"gpu": "V100 SXM2 32GB", "vram": 32}),
    (
        "Tesla V100-SXM2-32GB",
        RESNET,
        {"gpu": "Tesla V100-SXM2-32GB"},
        {"gpu": "V100 SXM2 32GB", "vram": 32},
    ),
    ("H100-80G-SXM5", RESNET, {"gpu": "H100-80G-SXM5"}, {"gpu": "H100 SXM 80GB", "vram": 80}),
    ("A100-80G-PCIe", RESNET, {"gpu": "A100-80G-PCIe"}, {"gpu": "A100 PCIe 80GB", "vram": 80}),
    (
        "A100-80GB on an NVSwitch board",
        RESNET,
        {"gpu": "A100-80GB", "interconnect": "nvswitch"},
        {"gpu": "A100 SXM4 80GB", "vram": 80},
    ),
    # Lambda's labels
    ("Lambda A100 (40 GB SXM4)", RESNET, {"gpu": "A100 (40 GB SXM4)"}, {"gpu": "A100 SXM4 40GB"}),
    ("Lambda H100 (80 GB PCIe)", RESNET, {"gpu": "H100 (80 GB PCIe)"}, {"gpu": "H100 PCIe 80GB"}),
    ("Lambda RTX 6000 (24 GB)", RESNET, {"gpu": "RTX 6000 (24 GB)"}, {"gpu": "Quadro RTX 6000"}),
    ("Lambda GH200 (96 GB)", RESNET, {"gpu": "GH200 (96 GB)"}, {"gpu": "GH200 96GB", "vram": 96}),
    # Vast's labels
    ("Vast RTX_3090", RESNET, {"gpu": "RTX_3090"}, {"gpu": "GeForce RTX 3090", "vram": 24}),
    ("Vast RTX 4070S Ti", RESNET, {"gpu": "RTX 4070S Ti"}, {"gpu": "GeForce RTX 4070 Ti SUPER"}),
    ("Vast Q RTX 8000", RESNET, {"gpu": "Q RTX 8000"}, {"gpu": "Quadro RTX 8000", "vram": 48}),
    # a VRAM no variant has: refused, naming the card and its VRAM
    (
        "4060-12GB",
        RESNET,
        {"gpu": "4060-12GB"},
        {"status": 400, "key": "hardware.gpu", "says": "GeForce RTX 4060 (8 GB)"},
    ),
    (
        "A6000-24G",
        RESNET,
        {"gpu": "A6000-24G"},
        {"status": 400, "key": "hardware.gpu", "says": "RTX A6000 (48 GB)"},
    ),
    # the label leaves the board open: both candidates named
    (
        "A100-80GB",
        RESNET,
        {"gpu": "A100-80GB"},
        {"status": 400, "key": "hardware.gpu", "says": "A100 SXM4 80GB or A100 PCIe 80GB"},
    ),
    (
        "6000D-84G",
        RESNET,
        {"gpu": "6000D-84G"},
        {"status": 400, "key": "hardware.gpu", "says": "unknown GPU"},
    ),
    # words as people write them: case and separators do not matter, HF Trainer's --fp16 is
    # autocast; "mixed" names no 16-bit format, so it is refused with the choices
    (
        "FP16 as HF Trainer's flag",
        {**RESNET, "precision": "FP16"},
        H100,
        {"same_as": {**RESNET, "precision": "fp16_amp"}},
    ),
    (
        "Bf16-AMP, ZeRO-2, QLoRA written loosely",
        {**QLORA_50K, "precision": "Bf16-AMP", "sharding": "ZERO2", "method": "QLoRA"},
        H100,
        {"same_as": {**QLORA_50K, "precision": "bf16_amp", "sharding": "zero2"}},
    ),
    # a dtype written as torch names it: no recipe trains fp16 weights without fp32 masters
    (
        "precision torch.float16",
        {**RESNET, "precision": "torch.float16"},
        H100,
        {"same_as": {**RESNET, "precision": "fp16_amp"}},
    ),
    # --- fields named as the tools people copy them from name them ------------------------
    # (app/interface/field_names.py SYNONYMS): values unlike the preset's, so a name read
    # wrongly, or not at all, changes the figures
    (
        "HF TrainingArguments' names",
        {
            "preset": "llama3-8b-lora",
            "per_device_train_batch_size": 3,
            "gradient_accumulation_steps": 5,
            "num_train_epochs": 2,
            "max_seq_length": "1k",
        },
        H100,
        {
            "same_as": {
                "preset": "llama3-8b-lora",
                "micro_batch_size": 3,
                "grad_accum_steps": 5,
                "epochs": 2,
                "seq_len": 1024,
            }
        },
    ),
    # a config.json's names for the custom decoder's shape, GQA's key/value heads included
    (
        "config.json's names",
        {
            **{k: v for k, v in CUSTOM.items() if k not in ("layers", "heads")},
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "tokens_per_epoch": 10**8,
        },
        H100,
        {
            "heads": 32,
            "kv_heads": 8,
            "same_as": {**CUSTOM, "kv_heads": 8, "tokens_per_epoch": 10**8},
        },
    ),
    # TrainingArguments(bf16=True): autocast in bf16, not the preset's pure bf16
    (
        "HF's bf16 flag",
        {"preset": "llama3-8b-lora", "bf16": True},
        H100,
        {"same_as": {"preset": "llama3-8b-lora", "precision": "bf16_amp"}},
    ),
    (
        "HF's bf16 flag against a precision",
        {"preset": "llama3-8b-lora", "bf16": True, "precision": "fp32"},
        H100,
        {"status": 400, "key": "workload", "says": "bf16 and precision both give precision"},
    ),
    (
        "HF's fp16 flag set false",
        {"preset": "llama3-8b-lora", "fp16": False},
        H100,
        {"status": 400, "key": "workload", "says": "fp16: False names no precision"},
    ),
    (
        "one field under two names",
        {"preset": "llama3-8b-lora", "seq_len": 2048, "max_seq_length": 4096},
        H100,
        {"status": 400, "key": "workload", "says": "seq_len and max_seq_length both give"},
    ),
    (
        "precision mixed",
        {**RESNET, "precision": "mixed"},
        H100,
        {"status": 400, "key": "workload.precision", "says": "fp16_amp"},
    ),
]


def _post(client: Any, workload: dict[str, Any], hardware: dict[str, Any]) -> Any:
    return client.post("/v1/estimate", json={"workload": workload, "hardware": hardware})


def test_at_least_sixty_natural_requests() -> None:
    assert len(CASES) >= 60
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize(
    ("workload", "hardware", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_natural_request_resolves_to_its_job(
    client: Any, workload: dict[str, Any], hardware: dict[str, Any], want: dict[str, Any]
) -> None:
    r = _post(client, workload, hardware)
    if want.get("status") == 400:
        assert r.status_code == 400, r.text
        body = r.json()
        hits = [e for e in body["extra"] if e["key"] == want["key"]]
        assert hits, body
        assert any(want["says"] in e["message"] for e in hits), body
        return
    assert r.status_code == 200, r.text
    body = r.json()
    job, hw, e = body["workload"], body["hardware"], body["estimate"]
    codes = [w["code"] for w in e["warnings"]]
    # every answer says what its epoch is and which card with how much memory it is about
    assert e["epoch_definition"] and hw["gpu"] and hw["vram_gib"]
    checks = {
        "tokens": e["epoch_tokens"],
        "samples": e["epoch_samples"],
        "heads": job.get("heads"),
        "kv_heads": job.get("kv_heads"),
        "params": job.get("params"),
        "ffn": job.get("ffn_hidden_size"),
        "gpu": hw["gpu"],
        "vram": hw["vram_gib"],
        "text_encoder_gib": e["memory"]["text_encoder_gib"],
        "vae_gib": e["memory"]["vae_gib"],
    }
    for key, got in checks.items():
        if key in want:
            assert got == pytest.approx(want[key]) if isinstance(got, float) else got == want[key]
    if "warn" in want:
        assert want["warn"] in codes, codes
    if "no_warn" in want:
        assert want["no_warn"] not in codes, codes
    if "note" in want:
        assert any(want["note"] in n for n in e["notes"]), e["notes"]
    if "defines" in want:
        assert want["defines"] in e["epoch_definition"]
    if "same_as" in want:
        base = _post(client, want["same_as"], hardware).json()["estimate"]
        for figure in ("samples_per_s", "epoch_hours", "peak_memory_gib", "epoch_samples"):
            assert e[figure] == base[figure], figure


def test_the_issues_job_costs_its_full_sequences(client: Any) -> None:
    # 3 epochs of 25,600,000 tokens at the estimate's own token rate; Alpaca's 92.4-token mean
    # (the preset's data) would have made it 25.6M / 4.62M = 5.5x shorter
    e = _post(client, QLORA_50K, {"gpu": "RTX 4090"}).json()["estimate"]
    assert e["total_hours"] == pytest.approx(3 * 25_600_000 / e["tokens_per_s"] / 3600)
    packed = _post(client, {**QLORA_50K, "tokens_per_sample": 92.4}, {"gpu": "RTX 4090"})
    assert e["total_hours"] / packed.json()["estimate"]["total_hours"] == pytest.approx(
        25_600_000 / 4_620_000
    )


#: Hugging Face config.json files as the hub serves them (shape keys only), with the heads
#: and key/value heads they must resolve to
HF_CONFIGS: list[tuple[str, dict[str, Any], int, int]] = [
    (
        "Meta-Llama-3-8B",
        {
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_hidden_layers": 32,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
            "max_position_embeddings": 8192,
            "tie_word_embeddings": False,
        },
        32,
        8,
    ),
    (
        "Qwen2-0.5B",
        {
            "architectures": ["Qwen2ForCausalLM"],
            "model_type": "qwen2",
            "hidden_size": 896,
            "intermediate_size": 4864,
            "num_hidden_layers": 24,
            "num_attention_heads": 14,
            "num_key_value_heads": 2,
            "vocab_size": 151936,
            "max_position_embeddings": 32768,
            "tie_word_embeddings": True,
        },
        14,
        2,
    ),
    (
        "gpt2",
        {
            "architectures": ["GPT2LMHeadModel"],
            "model_type": "gpt2",
            "n_embd": 768,
            "n_layer": 12,
            "n_head": 12,
            "vocab_size": 50257,
            "n_positions": 1024,
        },
        12,
        12,
    ),
    (
        "bert-base-uncased",
        {
            "architectures": ["BertForMaskedLM"],
            "model_type": "bert",
            "hidden_size": 768,
            "intermediate_size": 3072,
            "num_hidden_layers": 12,
            "num_attention_heads": 12,
            "vocab_size": 30522,
            "max_position_embeddings": 512,
        },
        12,
        12,
    ),
]


@pytest.mark.parametrize(
    ("config", "heads", "kv_heads"), [c[1:] for c in HF_CONFIGS], ids=[c[0] for c in HF_CONFIGS]
)
def test_a_hugging_face_config_with_n_samples_of_l_tokens(
    client: Any, config: dict[str, Any], heads: int, kv_heads: int
) -> None:
    fields = client.post("/v1/workloads/from-hf-config", json=config).json()["fields"]
    workload = {k: v for k, v in fields.items() if k != "max_positions"}
    r = _post(client, {**workload, "seq_len": 512, "samples_per_epoch": "20k"}, H100)
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["workload"]["heads"], body["workload"]["kv_heads"]) == (heads, kv_heads)
    # 20,000 samples of 512 tokens, counted as full sequences and said to be
    assert body["estimate"]["epoch_tokens"] == 20_000 * 512
    assert "epoch_tokens_padded" in [w["code"] for w in body["estimate"]["warnings"]]


README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _readme_example(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The README's request after ``<!-- natural-example: name -->`` and the answer excerpt
    that follows it (the next two JSON blocks)."""
    after = README.split(f"<!-- natural-example: {name} -->", 1)[1]
    request, excerpt = re.findall(r"```json\n(.*?)```", after, re.DOTALL)[:2]
    return json.loads(request), json.loads(excerpt)


def _subset(excerpt: Any, answer: Any) -> bool:
    if isinstance(excerpt, dict):
        return all(k in answer and _subset(v, answer[k]) for k, v in excerpt.items())
    return bool(excerpt == answer)


@pytest.mark.parametrize("name", ["epoch", "label"])
def test_the_readme_examples_are_the_api_answers(client: Any, name: str) -> None:
    request, excerpt = _readme_example(name)
    r = client.post("/v1/estimate", json=request)
    assert r.status_code == 200, r.text
    assert _subset(excerpt, r.json()), (excerpt, r.json())
    if name == "epoch":  # the warning the README names with it
        assert "epoch_tokens_padded" in [w["code"] for w in r.json()["estimate"]["warnings"]]


def test_an_offer_filter_never_swaps_a_stated_vram(client: Any) -> None:
    # "4060-12GB" filtered the 8 GB RTX 4060's offers; now a 400 naming the card's 8 GB
    r = client.get("/v1/offers", params={"gpu": "4060-12GB"})
    assert r.status_code == 400 and "GeForce RTX 4060 (8 GB)" in r.text, r.text
    ok = client.get("/v1/offers", params={"gpu": "3090-24G", "limit": 1}).json()
    assert ok["gpus_matched"] == ["GeForce RTX 3090"]


def test_a_query_string_takes_the_names_other_tools_use(client: Any) -> None:
    r = client.get(
        "/v1/rank",
        params={"preset": "llama3-8b-lora", "gradient_accumulation_steps": "3", "limit": "1"},
    )
    assert r.status_code == 200, r.text
    assert r.json()["workload"]["grad_accum_steps"] == 3
    r = client.get(
        "/v1/rank",
        params={"preset": "llama3-8b-lora", "seq_len": "2048", "cutoff_len": "4k", "limit": "1"},
    )
    assert r.status_code == 400, r.text
    assert r.json()["extra"] == [
        {
            "key": "request",
            "message": "seq_len and cutoff_len both give seq_len, with different values",
        }
    ]
