"""Inputs for driving `swift pt` on CPU without downloads: a tiny Qwen3 (random weights, saved with
save_pretrained), a byte-level BPE tokenizer trained here on the data, and a jsonl of text.
Usage: python samples/repro/swift/make_inputs.py WORKDIR"""

import json
import random
import sys
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

work = Path(sys.argv[1])
(work / "base_model").mkdir(parents=True, exist_ok=True)
(work / "dataset").mkdir(parents=True, exist_ok=True)
rnd = random.Random(0)
words = "the rank waits in a collective while another rank reads its data from a stale cache on node one".split()
texts = [" ".join(rnd.choice(words) for _ in range(rnd.randrange(40, 120))) for _ in range(400)]
with open(work / "dataset/shuffled_dataset.jsonl", "w") as f:
    for t in texts:
        f.write(json.dumps({"text": t}) + "\n")
special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=400, special_tokens=special))
fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                               bos_token=None, unk_token=None)
fast.chat_template = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                      "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
fast.save_pretrained(work / "base_model")
cfg = Qwen3Config(vocab_size=len(fast), hidden_size=64, intermediate_size=192, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=16, max_position_embeddings=512, eos_token_id=fast.eos_token_id,
                  pad_token_id=fast.pad_token_id, tie_word_embeddings=True)
Qwen3ForCausalLM(cfg).save_pretrained(work / "base_model")
print(work)
