import { Type } from '@sinclair/typebox'
import { FIELD_CODES, PROBLEMS } from '../../errors.ts'

export const LinkSchema = Type.Object({
  href: Type.String({ description: 'A root-relative path.' }),
  method: Type.Optional(Type.String({ description: 'The HTTP method; absent means GET.' })),
}, { $id: 'Link', additionalProperties: false })

export const FieldErrorSchema = Type.Object({
  field: Type.String({ description: 'JSON Pointer-like path of the member (`items/0/quantity`), or the query parameter\'s name.' }),
  code: Type.Union(Object.keys(FIELD_CODES).map(c => Type.Literal(c))),
  message: Type.String(),
}, { $id: 'FieldError', additionalProperties: false })

export const ProblemSchema = Type.Object({
  type: Type.String({ description: 'URI of a page describing the problem: `/problems/<code-in-kebab-case>`.' }),
  title: Type.String(),
  status: Type.Integer(),
  detail: Type.String(),
  instance: Type.String({ description: 'The path of the request.' }),
  code: Type.Union(Object.keys(PROBLEMS).map(c => Type.Literal(c)), { description: 'Stable code from the error catalogue.' }),
  errors: Type.Optional(Type.Array(Type.Ref(FieldErrorSchema), { description: 'One entry per violated constraint (422 only).' })),
  trace_id: Type.String({ description: 'W3C trace-id of the request.' }),
  request_id: Type.String({ description: 'X-Request-Id of the request.' }),
}, { $id: 'Problem', additionalProperties: false, description: 'RFC 9457 problem details with the service\'s extension members.' })

const STATUS_TEXT: Record<number, string> = {
  400: 'Malformed request (MALFORMED_JSON, INVALID_CURSOR, …)',
  401: 'No credential, or a bad one',
  403: 'The credential does not permit this',
  404: 'Not found',
  405: 'Method not allowed',
  406: 'Not acceptable',
  409: 'Conflict with the current state',
  410: 'API version retired',
  412: 'Precondition failed',
  413: 'Body over 1 MiB',
  414: 'Path and query over 8 KiB',
  415: 'Unsupported media type',
  416: 'Range not satisfiable (RANGE_NOT_SATISFIABLE); `Content-Range: bytes */<length>` gives the length',
  422: 'Invalid values (VALIDATION_FAILED with errors[])',
  429: 'Rate limited; see Retry-After',
  500: 'Internal error',
  503: 'Unavailable or timed out; see Retry-After',
}

/** Error responses of a route, all one shape: `application/problem+json`. */
export function problemResponses (...statuses: number[]): Record<number, unknown> {
  const out: Record<number, unknown> = {}
  for (const s of statuses) {
    out[s] = {
      description: STATUS_TEXT[s] ?? 'Error',
      content: { 'application/problem+json': { schema: Type.Ref(ProblemSchema) } },
    }
  }
  return out
}

/** Statuses any route can answer with. */
export const COMMON_ERRORS = [400, 401, 406, 410, 414, 429, 500, 503] as const

export const NotModifiedSchema = Type.Null({ description: 'Not modified: the copy named by If-None-Match / If-Modified-Since is current. No body.' })
export const NoContentSchema = Type.Null({ description: 'No content.' })
