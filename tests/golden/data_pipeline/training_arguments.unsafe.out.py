from transformers import Trainer, TrainingArguments

args = TrainingArguments(output_dir="out", per_device_train_batch_size=8, dataloader_drop_last=True)
trainer = Trainer(model=model, args=args, train_dataset=train_dataset)
trainer.train()
