/** One entry of a 422's `errors`: the field (a path such as `title` or `tags/0`) and why. */
export interface FieldProblem { readonly field: string, readonly code: string, readonly message: string }

/** An answer of the service that is not a success, read from its problem details. */
export class Problem extends Error {
  constructor (
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly errors: readonly FieldProblem[] = []
  ) {
    super(detail)
  }
}

export interface Answer<T> {
  readonly status: number
  readonly body: T
  readonly headers: Headers
}

const TOKEN_KEY = 'blog-editor.token'

/** The credential, kept for this tab only. */
export const credential = {
  get: (): string | null => sessionStorage.getItem(TOKEN_KEY),
  set: (token: string): void => { sessionStorage.setItem(TOKEN_KEY, token) },
  clear: (): void => { sessionStorage.removeItem(TOKEN_KEY) },
}

export interface CallOptions {
  /** Sent as JSON. */
  readonly json?: unknown
  /** Sent as is (a file, a form). */
  readonly body?: BodyInit
  readonly headers?: Record<string, string>
}

/**
 * The service's public API, from the page's own origin, with the tab's credential. A 401 signs the
 * tab out (`onSignedOut`); every other failure is thrown as a Problem.
 */
export class Api {
  constructor (private readonly onSignedOut: (why: string) => void) {}

  async call<T = unknown> (method: string, path: string, opts: CallOptions = {}): Promise<Answer<T>> {
    const headers: Record<string, string> = { accept: 'application/json', ...opts.headers }
    const token = credential.get()
    if (token !== null) headers.authorization = `Bearer ${token}`
    let body = opts.body
    if (opts.json !== undefined) {
      headers['content-type'] = 'application/json'
      body = JSON.stringify(opts.json)
    }
    let res: Response
    try {
      res = await fetch(path, { method, headers, body: body ?? null, cache: 'no-store' })
    } catch {
      throw new Problem(0, 'NETWORK', 'The service could not be reached. Your text is kept in this tab: try again.')
    }
    const text = await res.text()
    const parsed: unknown = text === '' ? null : safeJson(text)
    if (res.ok) return { status: res.status, body: parsed as T, headers: res.headers }
    const p = (parsed ?? {}) as { code?: string, detail?: string, title?: string, errors?: FieldProblem[] }
    const problem = new Problem(res.status, p.code ?? String(res.status), p.detail ?? p.title ?? res.statusText, p.errors ?? [])
    if (res.status === 401 && token !== null) {
      credential.clear()
      this.onSignedOut(problem.detail)
    }
    throw problem
  }
}

function safeJson (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

/** The target of a `Link` header's relation (RFC 8288), as a path on this origin. */
export function linkOf (header: string | null, rel: string): string | null {
  if (header === null) return null
  for (const part of header.split(/,(?=\s*<)/)) {
    const m = /<([^>]*)>(.*)/.exec(part.trim())
    if (m !== null && new RegExp(`rel="?([^"]*\\s)?${rel}(\\s[^"]*)?"?(;|$)`).test(m[2] ?? '')) {
      const url = new URL(m[1] ?? '', location.origin)
      return url.pathname + url.search
    }
  }
  return null
}
