import http from 'node:http'
import https from 'node:https'
import { isIP } from 'node:net'
import { addressAllowed, classifyAddress, guardedLookup } from '../../facilities/events/index.ts'

export interface ImageFetchOptions {
  /** Loopback addresses allowed too (WEBHOOK_ALLOW_LOOPBACK), as for webhooks. */
  readonly allowLoopback: boolean
  /** A larger answer is refused: by its Content-Length at once, else as soon as more arrives. */
  readonly maxBytes: number
  /** For the whole fetch: every redirect, and the body. */
  readonly timeoutMs: number
  readonly maxRedirects: number
}

/** Why an image could not be fetched, in words for the import's report. */
export class ImageFetchError extends Error {}

const REDIRECTS = new Set([301, 302, 303, 307, 308])
/** Types a host may give an image as: its bytes are judged after (media's rules), never this header alone. */
const BINARY_TYPES = new Set(['application/octet-stream', 'binary/octet-stream'])
const USER_AGENT = `blog-post-service/${process.env.npm_package_version ?? '0.1.0'} (import)`

/** The URL's own refusals, before any connection: its scheme, credentials, and an IP literal's class. */
function checkUrl (url: URL, allowLoopback: boolean): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ImageFetchError(`${url.protocol} is not http or https`)
  if (url.username !== '' || url.password !== '') throw new ImageFetchError('the URL holds credentials')
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  // An IP literal is connected to without a lookup (which refuses names that lead to such addresses).
  if (isIP(host) !== 0 && !addressAllowed(host, allowLoopback)) throw new ImageFetchError(`${host} is a ${classifyAddress(host)} address`)
}

interface InFlight { req: http.ClientRequest | null, res: http.IncomingMessage | null }

function get (url: URL, allowLoopback: boolean, flight: InFlight): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? https : http).request(url, {
      method: 'GET',
      headers: { 'user-agent': USER_AGENT, accept: 'image/*' },
      // A connection of its own, resolved by the guarded lookup (no pooled socket made without it).
      agent: false,
      lookup: guardedLookup(allowLoopback) as never,
    }, resolve)
    flight.req = req
    req.on('error', reject)
    req.end()
  })
}

async function readCapped (res: http.IncomingMessage, max: number): Promise<Buffer> {
  const chunks: Buffer[] = []
  let total = 0
  for await (const chunk of res as AsyncIterable<Buffer>) {
    total += chunk.length
    if (total > max) throw new ImageFetchError(`it is larger than ${max} bytes; it was not read further`)
    chunks.push(chunk)
  }
  return Buffer.concat(chunks, total)
}

function reasonOf (err: unknown): string {
  const e = err as NodeJS.ErrnoException
  if (e.code === 'EADDRNOTALLOWED') return e.message
  if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN') return 'its host name does not resolve'
  return e.code === undefined ? String(e.message ?? err) : `${e.code}: ${e.message}`
}

/**
 * Fetches one image by GET under the rules of webhooks' URLs: http(s), no credentials, only to
 * addresses a webhook may reach (checked on the addresses each connection uses, so a name that
 * resolves elsewhere later is refused too), redirects followed at most `maxRedirects` times and
 * each checked alike. The body is read only while it stays within `maxBytes`, and the whole fetch
 * within `timeoutMs`; an answer whose type says it is no image (HTML) is not read at all.
 * Throws ImageFetchError with the reason.
 */
export async function fetchImage (raw: string, opts: ImageFetchOptions): Promise<Buffer> {
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new ImageFetchError('it is not an absolute URL')
  }
  const flight: InFlight = { req: null, res: null }
  let timedOut = false
  // A plain timer cuts whatever is in flight: the request, or the answer being read.
  const timer = setTimeout(() => {
    timedOut = true
    flight.req?.destroy()
    flight.res?.destroy()
  }, opts.timeoutMs)
  try {
    for (let redirects = 0; ; redirects++) {
      checkUrl(url, opts.allowLoopback)
      const res = await get(url, opts.allowLoopback, flight)
      flight.res = res
      const status = res.statusCode ?? 0
      if (REDIRECTS.has(status)) {
        res.destroy()
        const location = res.headers.location
        if (location === undefined) throw new ImageFetchError(`the host answered ${status} without a Location`)
        if (redirects >= opts.maxRedirects) throw new ImageFetchError(`it redirects more than ${opts.maxRedirects} times`)
        try {
          url = new URL(location, url)
        } catch {
          throw new ImageFetchError(`the host redirected to "${location.slice(0, 200)}", which is no URL`)
        }
        continue
      }
      if (status !== 200) {
        res.destroy()
        throw new ImageFetchError(`the host answered ${status}`)
      }
      const type = (res.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase()
      if (type !== '' && !type.startsWith('image/') && !BINARY_TYPES.has(type)) {
        res.destroy()
        throw new ImageFetchError(`it is not an image: the host sent ${type.slice(0, 100)}`)
      }
      const length = Number(res.headers['content-length'])
      if (Number.isFinite(length) && length > opts.maxBytes) {
        res.destroy()
        throw new ImageFetchError(`it is ${length} bytes, more than the ${opts.maxBytes} an image may have; it was not read`)
      }
      const bytes = await readCapped(res, opts.maxBytes)
      return bytes
    }
  } catch (err) {
    if (timedOut) throw new ImageFetchError(`no answer within ${opts.timeoutMs} ms`)
    if (err instanceof ImageFetchError) throw err
    throw new ImageFetchError(reasonOf(err))
  } finally {
    clearTimeout(timer)
    flight.res?.destroy()
  }
}

/** The URL an image source is fetched from: absolute http(s) (`//host/…` as https), else null. */
export function fetchableUrl (src: string): string | null {
  const s = src.trim()
  const absolute = s.startsWith('//') ? `https:${s}` : s
  if (!/^https?:\/\//i.test(absolute)) return null
  try {
    return new URL(absolute).href
  } catch {
    return null
  }
}
