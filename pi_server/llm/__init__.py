"""The model layer: convertToLlm, Anthropic and OpenAI payloads, wire formats, token estimates,
the model table and the one Anthropic client."""
