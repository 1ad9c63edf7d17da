/** One entry of a 422's `errors`: the field (a path such as `title` or `tags/0`) and why. */
export interface FieldProblem { readonly field: string, readonly code: string, readonly message: string }

/** A failure in a person's words: a problem's detail and the field errors it lists, or the error's message. */
export function failureText (err: unknown): string {
  if (!(err instanceof Problem)) return err instanceof Error ? err.message : String(err)
  return err.errors.length > 0 ? `${err.detail} ${err.errors.map(e => `${e.field}: ${e.message}`).join('; ')}` : err.detail
}

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

/**
 * A person's session: its access token in this page's memory only (the refresh token is the
 * service's HttpOnly cookie, which the page never sees), made again a minute before it expires.
 */
let session: { token: string, timer: ReturnType<typeof setTimeout> | undefined } | null = null
let refreshing: Promise<boolean> | null = null
/** Why the service last refused to make the session's access token again (its problem code). */
let refusedAs: string | null = null

/** Whether this browser holds a session's cookie (a mark, not a secret): a reload then asks for its access token. */
const SESSION_MARK = 'blog-editor.session'

function endSession (): void {
  clearTimeout(session?.timer)
  session = null
  localStorage.removeItem(SESSION_MARK)
}

/** Whether a session may live on in the cookie (this browser signed in and did not sign out). */
export function sessionMarked (): boolean {
  return localStorage.getItem(SESSION_MARK) !== null
}

/** The credential: a person's session, or an API key or JWT kept for this tab only. */
export const credential = {
  get: (): string | null => session?.token ?? sessionStorage.getItem(TOKEN_KEY),
  /** An API key or a JWT, pasted in. */
  set: (token: string): void => { endSession(); sessionStorage.setItem(TOKEN_KEY, token) },
  clear: (): void => { endSession(); sessionStorage.removeItem(TOKEN_KEY) },
  /** Whether it is a person's session (signed in with a password, a passkey, a set-up or an invitation). */
  isSession: (): boolean => session !== null,
}

/** A session started by a sign-in's answer (`refresh: "cookie"`): its access token, kept in memory. */
export function startSession (answer: { access_token: string, expires_in: number }): void {
  endSession()
  refusedAs = null
  sessionStorage.removeItem(TOKEN_KEY)
  localStorage.setItem(SESSION_MARK, '1')
  session = { token: answer.access_token, timer: setTimeout(() => { refreshSession().catch(() => {}) }, Math.max(5, answer.expires_in - 60) * 1000) }
}

/**
 * Makes the session's access token again from the refresh cookie (rotating it): true when the
 * session lives on. One refresh at a time: a refresh token presented twice ends the session.
 */
export async function refreshSession (): Promise<boolean> {
  refreshing ??= (async () => {
    try {
      const res = await fetch('/sessions/refresh', { method: 'POST', headers: { accept: 'application/json' }, cache: 'no-store' })
      if (!res.ok) {
        refusedAs = res.status === 401 ? ((await res.json().catch(() => ({}))) as { code?: string }).code ?? 'SESSION_REVOKED' : null
        endSession()
        return false
      }
      startSession(await res.json() as { access_token: string, expires_in: number })
      return true
    } catch {
      return session !== null
    } finally {
      refreshing = null
    }
  })()
  return await refreshing
}

/**
 * Why a person's session ended without them signing out, in their words: the service refused
 * its refresh (an admin suspended the account, or it was signed out elsewhere).
 */
export function sessionEndedWhy (): string | null {
  if (refusedAs === null) return null
  return refusedAs === 'USER_SUSPENDED'
    ? 'An admin suspended your account. Unsaved text stays in this tab.'
    : 'The service ended your session: an admin suspended your account, or it was signed out elsewhere. Unsaved text stays in this tab.'
}

/** Ends the session on the service (its refresh cookie is then refused), then here. */
export async function endSessionOnService (): Promise<void> {
  const token = session?.token
  endSession()
  try {
    await fetch('/sessions/current', { method: 'DELETE', headers: token === undefined ? {} : { authorization: `Bearer ${token}` }, cache: 'no-store' })
  } catch {}
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

  async call<T = unknown> (method: string, path: string, opts: CallOptions = {}, retried = false): Promise<Answer<T>> {
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
    // A session's access token that expired (or a reload that lost it): made again once, the request retried.
    const wasSession = credential.isSession()
    if (res.status === 401 && wasSession && !retried && await refreshSession()) return await this.call<T>(method, path, opts, true)
    if (res.status === 401 && token !== null) {
      credential.clear()
      this.onSignedOut((wasSession ? sessionEndedWhy() : null) ?? problem.detail)
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
