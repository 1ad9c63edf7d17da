/**
 * Recognises failures that mean "the database cannot answer now" rather than "this request is
 * wrong": the caller should get 503 SERVICE_UNAVAILABLE with Retry-After, never 500.
 */

/** Socket-level failures (Node system error codes) on the way to the database. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ENETDOWN', 'ECONNABORTED'])

/**
 * PostgreSQL SQLSTATEs: class 08 (connection exception), 53 (insufficient resources, e.g. 53300
 * too_many_connections), 57P01–57P05 (admin/crash shutdown, cannot connect now, idle session
 * timeout) and 57014 (query_canceled, which statement_timeout raises); and the refusals a
 * connection attempt can meet when the database is being moved, restored or reconfigured:
 * 55000 (e.g. "database is not currently accepting connections"), 3D000 (the database does not
 * exist), 28000 / 28P01 (the server refuses our login).
 */
const PG_REFUSED_CONNECTION = new Set(['55000', '3D000', '28000', '28P01'])

function isPgUnavailable (code: string): boolean {
  return /^(08|53)[0-9A-Z]{3}$/.test(code) || /^57P0[1-5]$/.test(code) || code === '57014' || PG_REFUSED_CONNECTION.has(code)
}

/**
 * SQLite result codes: the file is locked beyond busy_timeout, full, or cannot be read or written;
 * or the transaction was rolled back under the statement (ABORT_ROLLBACK, also what a group
 * commit's other units get then, src/store/group-commit.ts).
 */
const SQLITE_CODES = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|CANTOPEN|PROTOCOL|ABORT_ROLLBACK)(_|$)/

/** pg and pg-pool raise these without a code. */
const PG_MESSAGES = [
  'timeout exceeded when trying to connect',
  'Connection terminated',
  'Query read timeout',
  'Client has encountered a connection error and is not queryable',
  'Cannot use a pool after calling end on the pool',
]

/**
 * True when `err` (or its `cause`, or one of an AggregateError's errors) says the store is
 * unreachable, overloaded or shutting down.
 *
 * @example
 * if (isStoreUnavailable(err)) return sendProblem(req, reply, new AppError('SERVICE_UNAVAILABLE'))
 */
export function isStoreUnavailable (err: unknown, depth = 0): boolean {
  if (typeof err !== 'object' || err === null || depth > 5) return false
  const { code, message, cause, errors } = err as { code?: unknown, message?: unknown, cause?: unknown, errors?: unknown }
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || isPgUnavailable(code) || SQLITE_CODES.test(code))) return true
  if (typeof message === 'string' && PG_MESSAGES.some(m => message.includes(m))) return true
  if (Array.isArray(errors) && errors.some(e => isStoreUnavailable(e, depth + 1))) return true
  return isStoreUnavailable(cause, depth + 1)
}
