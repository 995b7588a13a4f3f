// Owns the version string reported by the CLI and the OpenAPI document.
export const VERSION = '0.1.0';
