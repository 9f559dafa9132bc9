"""PyTorch models, prompt samplers and trainers (cpu or cuda); no knowledge of papers or verdicts."""
