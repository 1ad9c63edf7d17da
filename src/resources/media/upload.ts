import type {} from '@fastify/multipart'
import { Readable } from 'node:stream'
import type { FastifyRequest } from 'fastify'
import { AppError, fieldError, validationFailed } from '../../errors.ts'
import { message } from '../../messages.ts'

/** What an upload brings besides its bytes. */
export interface Received {
  readonly bytes: Buffer
  /** The type the client declared for the file, if any. */
  readonly declared: string | undefined
  /** As the client named it, made safe (sanitiseFilename), or null. */
  readonly filename: string | null
  readonly alt: string
  readonly caption: string
}

const MULTIPART = 'multipart/form-data'
// Every C0 and C1 control, DEL, and the marks that reorder how text is shown (a name ending "gpj.exe").
// eslint-disable-next-line no-control-regex -- control characters are exactly what is removed
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g

export function tooLarge (max: number): AppError {
  return new AppError('PAYLOAD_TOO_LARGE', `The file is larger than the ${max} bytes this service accepts (MEDIA_MAX_BYTES).`)
}

/**
 * A client's file name as the service keeps it: its last path segment (no `../`), without control
 * or bidirectional characters, at most 255 characters; null when nothing is left.
 */
export function sanitiseFilename (raw: string | null | undefined): string | null {
  if (raw === null || raw === undefined) return null
  const last = raw.split(/[/\\]/).pop() ?? ''
  const clean = last.replace(UNSAFE, '').trim()
  if (clean === '' || clean === '.' || clean === '..') return null
  return Array.from(clean).slice(0, 255).join('')
}

/** The file name of a `Content-Disposition` header (RFC 6266: `filename*` of UTF-8 wins over `filename`). */
export function dispositionFilename (header: string | undefined): string | null {
  if (header === undefined) return null
  const star = /filename\*\s*=\s*utf-8''([^;]+)/i.exec(header)
  if (star !== null) {
    try {
      return decodeURIComponent(star[1]!.trim())
    } catch {
      return null
    }
  }
  const quoted = /filename\s*=\s*"((?:[^"\\]|\\.)*)"/i.exec(header)
  if (quoted !== null) return quoted[1]!.replace(/\\(.)/g, '$1')
  const token = /filename\s*=\s*([^;\s]+)/i.exec(header)
  return token === null ? null : token[1]!
}

/** Reads a body of at most `max` bytes: 413 at once when its length says more, or as soon as more arrive. */
async function readLimited (stream: Readable, max: number, declaredLength: string | undefined): Promise<Buffer> {
  if (declaredLength !== undefined && Number(declaredLength) > max) throw tooLarge(max)
  const chunks: Buffer[] = []
  let total = 0
  // Not destroyed when the loop stops early: destroying the request resets its connection.
  for await (const chunk of stream.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    total += chunk.length
    if (total > max) {
      // The rest is read and dropped, not reset (a reset loses the answer); the answer closes the connection.
      stream.resume()
      throw tooLarge(max)
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks, total)
}

const FIELDS = new Set(['alt', 'caption'])
const FIELD_LIMITS: Record<string, number> = { alt: 500, caption: 1000 }

/** A form: exactly one file part named `file`, optional `alt` and `caption`; anything else is 422. */
async function readForm (req: FastifyRequest, max: number): Promise<Received> {
  let file: { bytes: Buffer, declared: string, filename: string | null } | null = null
  const values: Record<string, string> = { alt: '', caption: '' }
  try {
    for await (const part of req.parts({ limits: { fileSize: max, files: 1, fields: 10, fieldSize: 4096, parts: 12 } })) {
      if (part.type === 'file') {
        if (part.fieldname !== 'file') {
          part.file.resume()
          throw validationFailed([fieldError(part.fieldname, 'UNKNOWN_FIELD', 'The form takes one file, in a part named "file".')])
        }
        file = { bytes: await part.toBuffer(), declared: part.mimetype, filename: sanitiseFilename(part.filename) }
      } else {
        if (!FIELDS.has(part.fieldname)) throw validationFailed([fieldError(part.fieldname, 'UNKNOWN_FIELD')])
        const value = String(part.value)
        if (value.length > FIELD_LIMITS[part.fieldname]!) throw validationFailed([fieldError(part.fieldname, 'TOO_LONG', `At most ${FIELD_LIMITS[part.fieldname]!} characters.`)])
        // As in JSON bodies: PostgreSQL text cannot hold NUL, so no store takes it.
        if (value.includes('\u0000')) throw validationFailed([fieldError(part.fieldname, 'INVALID_FORMAT', message('NUL_CHARACTER'))])
        values[part.fieldname] = value
      }
    }
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge(max)
    if (code === 'FST_FILES_LIMIT') throw validationFailed([fieldError('file', 'INVALID_VALUE', 'The form holds more than one file; send one, in a part named "file".')])
    if (code === 'FST_PARTS_LIMIT' || code === 'FST_FIELDS_LIMIT') throw validationFailed([fieldError('', 'INVALID_VALUE', 'The form has more parts than it may: one file, alt and caption.')])
    if (err instanceof AppError) throw err
    throw new AppError('BAD_REQUEST', `The form cannot be read: ${(err as Error).message}.`)
  }
  if (file === null) throw validationFailed([fieldError('file', 'REQUIRED', 'The form holds no file; send it in a part named "file".')])
  return { bytes: file.bytes, declared: file.declared, filename: file.filename, alt: values.alt!, caption: values.caption! }
}

/** The upload of a POST: the body is the file, or a form holding it. */
export async function receiveUpload (req: FastifyRequest, max: number): Promise<Received> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
  if (type === MULTIPART) {
    if (req.headers['content-length'] !== undefined && Number(req.headers['content-length']) > max + 64 * 1024) throw tooLarge(max)
    return await readForm(req, max)
  }
  // No body at all (no Content-Type, nothing sent) is an empty file, refused as one by its bytes.
  const bytes = req.body instanceof Readable ? await readLimited(req.body, max, req.headers['content-length']) : Buffer.alloc(0)
  return {
    bytes,
    declared: req.headers['content-type'],
    filename: sanitiseFilename(dispositionFilename(req.headers['content-disposition'])),
    alt: '',
    caption: '',
  }
}
