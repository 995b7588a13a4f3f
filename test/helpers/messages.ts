// Owns building hostile test messages: deep MIME nesting and oversized header sections.

/**
 * A message nested `depth` levels deep: multiparts inside one another (with `message`, every second level is an
 * attached message/rfc822 instead), a text part innermost. `head` is the top-level header fields before the MIME ones.
 */
export function nestedMime(depth: number, container: 'multipart' | 'message' = 'multipart', head = 'From: a@sender.test\r\nSubject: deep\r\n'): string {
  let entity = 'Content-Type: text/plain\r\n\r\nleaf\r\n';
  for (let i = depth; i >= 1; i--) {
    const kind = container === 'message' && i % 2 === 0 ? 'message' : 'multipart';
    entity =
      kind === 'message'
        ? `Content-Type: message/rfc822\r\n\r\nSubject: level ${i}\r\n${entity}`
        : `Content-Type: multipart/mixed; boundary="=_level_${i}_="\r\n\r\npreamble\r\n--=_level_${i}_=\r\n${entity}\r\n--=_level_${i}_=--\r\nepilogue\r\n`;
  }
  return `${head}MIME-Version: 1.0\r\n${entity}`;
}

/** A header section of at least `bytes` bytes: `X-Filler` fields of 78-byte lines, then `head`, an empty line, a body. */
export function bigHeader(bytes: number, head = 'From: a@sender.test\r\nSubject: big\r\n'): string {
  const field = `X-Filler: ${'f'.repeat(66)}\r\n`;
  return field.repeat(Math.ceil(bytes / field.length)) + head + '\r\nbody\r\n';
}
