import type { Message } from './messages.ts'

/**
 * The core's problem codes. Every error the service sends carries a code of the catalogue
 * (src/catalogue.ts): these, then those the resources and facilities declare, put together when
 * the service is composed. The same problem always gives the same status and code.
 * `docs/errors.md` and the OpenAPI document are generated from the catalogue.
 */
export const CORE_PROBLEMS = {
  MALFORMED_JSON: { status: 400, title: 'Malformed JSON', detail: 'The request body is not valid JSON.' },
  INVALID_CURSOR: { status: 400, title: 'Invalid cursor', detail: 'The cursor was not issued for this query, or it was altered. Start again from the first page.' },
  INVALID_IDEMPOTENCY_KEY: { status: 400, title: 'Invalid Idempotency-Key', detail: 'An Idempotency-Key must be 1 to 255 visible ASCII characters.' },
  BAD_REQUEST: { status: 400, title: 'Bad request', detail: 'The request could not be understood.' },
  UNAUTHENTICATED: { status: 401, title: 'Authentication required', detail: 'This request needs a bearer token or API key in the Authorization header.' },
  INVALID_TOKEN: { status: 401, title: 'Invalid token', detail: 'The credential is malformed, expired, revoked or not signed by a trusted key.' },
  FORBIDDEN: { status: 403, title: 'Forbidden', detail: 'The credential is valid but does not permit this action.' },
  NOT_FOUND: { status: 404, title: 'Not found', detail: 'There is nothing at this path.' },
  METHOD_NOT_ALLOWED: { status: 405, title: 'Method not allowed', detail: 'This path does not support this method; the Allow header lists those it does.' },
  NOT_ACCEPTABLE: { status: 406, title: 'Not acceptable', detail: 'None of the media types in the Accept header can be produced. Use application/json or application/vnd.blog.v1+json or application/vnd.blog.v2+json.' },
  CLIENT_TIMEOUT: { status: 408, title: 'Request not received in time', detail: 'The request line, headers or body did not arrive in time; the connection is closed.' },
  CONFLICT: { status: 409, title: 'Conflict', detail: 'The request conflicts with the current state of the resource.' },
  PATCH_TEST_FAILED: { status: 409, title: 'Patch test failed', detail: 'A "test" operation of the JSON Patch did not match the current resource; nothing was changed.' },
  IDEMPOTENCY_KEY_IN_USE: { status: 409, title: 'Idempotency key in use', detail: 'A request with this Idempotency-Key is still being processed. Retry later.' },
  VERSION_SUNSET: { status: 410, title: 'API version retired', detail: 'This version of the API has passed its sunset date. Use a newer version.' },
  PRECONDITION_FAILED: { status: 412, title: 'Precondition failed', detail: 'The resource has changed since the version named in If-Match or If-Unmodified-Since. Nothing was changed.' },
  PAYLOAD_TOO_LARGE: { status: 413, title: 'Payload too large', detail: 'The request body is larger than this endpoint accepts (1 MiB for JSON; some endpoints set limits of their own).' },
  URI_TOO_LONG: { status: 414, title: 'URI too long', detail: 'The request URI is longer than the service accepts.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, title: 'Unsupported media type', detail: 'The Content-Type of the request body is not supported here.' },
  RANGE_NOT_SATISFIABLE: { status: 416, title: 'Range not satisfiable', detail: 'The requested byte range lies outside the file.' },
  EXPECTATION_FAILED: { status: 417, title: 'Expectation failed', detail: 'The Expect header names an expectation the service cannot meet; only 100-continue is supported.' },
  VALIDATION_FAILED: { status: 422, title: 'Validation failed', detail: 'The request is well-formed but some values are invalid; see errors.' },
  INVALID_PATCH: { status: 422, title: 'Invalid patch', detail: 'The patch document cannot be applied to this resource.' },
  IDEMPOTENCY_KEY_REUSED: { status: 422, title: 'Idempotency key reused', detail: 'This Idempotency-Key was already used with a different request body.' },
  RATE_LIMITED: { status: 429, title: 'Too many requests', detail: 'The rate limit for this client is exhausted. Retry after the time in Retry-After.' },
  HEADERS_TOO_LARGE: { status: 431, title: 'Request header fields too large', detail: 'The request headers are larger than the service accepts.' },
  INTERNAL_ERROR: { status: 500, title: 'Internal server error', detail: 'Something went wrong on our side. Quote the request_id when you report it.' },
  SERVICE_UNAVAILABLE: { status: 503, title: 'Service unavailable', detail: 'The service is overloaded or its store is unreachable. Retry after the time in Retry-After.' },
  REQUEST_TIMEOUT: { status: 503, title: 'Request timed out', detail: 'The request did not finish in time and was abandoned. Retry after the time in Retry-After.' },
} as const satisfies Record<string, ProblemDef>

export interface ProblemDef { readonly status: number, readonly title: string, readonly detail: string }

/**
 * Codes a part adds from its own folder, by declaration merging (`interface ResourceProblems
 * { TICKET_NOT_FOUND: true }`); its definition declares their texts (`problems`), which the
 * catalogue is built from.
 */
export interface ResourceProblems {}

export type CoreProblemCode = keyof typeof CORE_PROBLEMS
export type ProblemCode = CoreProblemCode | keyof ResourceProblems

/** The core's codes of `errors[].code` in a 422 body, one per kind of violated constraint. */
export const CORE_FIELD_CODES = {
  REQUIRED: 'The member or parameter is required.',
  UNKNOWN_FIELD: 'The body has a member this resource does not define.',
  UNKNOWN_PARAMETER: 'The query has a parameter this endpoint does not define.',
  INVALID_TYPE: 'The value has the wrong type.',
  BLANK: 'The value is empty or only white space.',
  TOO_SHORT: 'The value is shorter than allowed.',
  TOO_LONG: 'The value is longer than allowed.',
  OUT_OF_RANGE: 'The number lies outside the allowed range.',
  NEGATIVE_VALUE: 'The number must not be negative.',
  INVALID_FORMAT: 'The value does not have the required format.',
  INVALID_EMAIL: 'The value is not an e-mail address.',
  INVALID_VALUE: 'The value is not one of those allowed.',
  ID_MISMATCH: 'The id in the body differs from the id in the path.',
  READ_ONLY: 'The member is set by the service and cannot be chosen by the client.',
  CONFLICTING_PARAMETERS: 'Two parameters contradict each other.',
} as const satisfies Record<string, string>

/**
 * Codes of `errors[].code` a part adds for its own rules, by declaration merging (`interface
 * ResourceFieldCodes { SLOT_TAKEN: true }`); its definition declares their texts (`fieldCodes`),
 * as it does its problem codes.
 */
export interface ResourceFieldCodes {}

export type CoreFieldCode = keyof typeof CORE_FIELD_CODES
export type FieldCode = CoreFieldCode | keyof ResourceFieldCodes

export interface FieldError {
  /** JSON Pointer-like path without the leading slash (`title`, `items/0/quantity`), or a query parameter's name. */
  field: string
  code: FieldCode
  /**
   * What a person reads: a catalogue message (src/messages.ts), worded in the request's language
   * when the problem is sent. A plain string is sent as it is, in every language: avoid it. None:
   * the code's text in the catalogue.
   */
  message?: Message | string
}

/**
 * An error the service means to send. Anything else that is thrown becomes 500 INTERNAL_ERROR.
 * Its status, title and general detail are the catalogue's for its code (`catalogue.problems`).
 */
export class AppError extends Error {
  readonly code: ProblemCode
  /** The specific detail, when the thrower gave one; else the catalogue's for the code is sent. */
  readonly detail: string | undefined
  readonly errors: FieldError[] | undefined
  readonly headers: Record<string, string>

  constructor (code: ProblemCode, detail?: string, opts: { errors?: FieldError[], headers?: Record<string, string> } = {}) {
    // An expected answer, not a fault: capturing a stack trace for every 404 or 422 is wasted work.
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    super(detail ?? (code in CORE_PROBLEMS ? CORE_PROBLEMS[code as CoreProblemCode].detail : code))
    Error.stackTraceLimit = limit
    this.name = 'AppError'
    this.code = code
    this.detail = detail
    this.errors = opts.errors
    this.headers = opts.headers ?? {}
  }
}

/** 422 VALIDATION_FAILED with one entry per violated constraint. */
export function validationFailed (errors: FieldError[]): AppError {
  return new AppError('VALIDATION_FAILED', undefined, { errors })
}

/** One entry of a 422's `errors[]`; without a message, the catalogue's text for the code is sent. */
export function fieldError (field: string, code: FieldCode, message?: Message | string): FieldError {
  const text = message ?? (code in CORE_FIELD_CODES ? CORE_FIELD_CODES[code as CoreFieldCode] : undefined)
  return text === undefined ? { field, code } : { field, code, message: text }
}

/** `VERSION_SUNSET` → `version-sunset`, the last segment of the problem's `type` URI. */
export function problemSlug (code: string): string {
  return code.toLowerCase().replaceAll('_', '-')
}
