import { isUtf8 } from 'node:buffer'

/** How many of `buf`'s bytes end on a whole UTF-8 sequence: the rest may continue in the next stretch. */
function wholeLength (buf: Buffer): number {
  for (let back = 1; back <= Math.min(4, buf.length); back++) {
    const b = buf[buf.length - back]!
    if ((b & 0xc0) === 0x80) continue
    const needed = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1
    return needed > back ? buf.length - back : buf.length
  }
  return buf.length
}

/** Counts the bytes a reader has taken, for its progress. */
export interface ByteCounter { bytes: number }

/**
 * The file as text, stretch by stretch. Bytes that are not UTF-8 do not stop the import: they are
 * read as U+FFFD and `onInvalid` is told where (the byte offset of the stretch that held them).
 */
export async function * utf8Text (bytes: AsyncIterable<Uint8Array>, counter: ByteCounter, onInvalid: (offset: number) => void): AsyncGenerator<string> {
  let carry = Buffer.alloc(0)
  let offset = 0
  const decode = (buf: Buffer): string => {
    if (!isUtf8(buf)) onInvalid(offset)
    let text = buf.toString('utf8')
    if (offset === 0 && text.startsWith('\uFEFF')) text = text.slice(1)
    offset += buf.length
    return text
  }
  for await (const chunk of bytes) {
    counter.bytes += chunk.byteLength
    const buf = carry.length > 0 ? Buffer.concat([carry, chunk]) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    const cut = wholeLength(buf)
    carry = Buffer.from(buf.subarray(cut))
    if (cut > 0) yield decode(buf.subarray(0, cut))
  }
  if (carry.length > 0) yield decode(carry)
}
