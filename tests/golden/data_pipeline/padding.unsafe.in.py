from transformers import DataCollatorWithPadding, Trainer


def tokenize(examples):
    return tokenizer(
        examples["sentence"],
        padding=True,
        truncation=True,
        max_length=128,
    )


train = raw["train"].map(tokenize, batched=True)
collator = DataCollatorWithPadding(tokenizer=tokenizer)
trainer = Trainer(model=model, args=args, train_dataset=train, data_collator=collator)
trainer.train()
