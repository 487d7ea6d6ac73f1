"""Model wire formats: convertToLlm, Anthropic and OpenAI payloads, token estimates."""
