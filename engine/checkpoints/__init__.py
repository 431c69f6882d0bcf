"""A writer's own pretrained checkpoints on their disk: finding them (a folder or a name in the local
Hugging Face cache, never the hub) and checking that one can be imported (docs/bring-your-own-model.md)."""
