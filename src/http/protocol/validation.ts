import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'
import { fieldError, type FieldCode, type FieldError } from '../../errors.ts'
import { type JsonType, type Message, message } from '../../messages.ts'

// ajv-formats is CommonJS; its default export arrives wrapped under ESM.
type AddFormats = (ajv: Ajv, formats: string[]) => Ajv
const addFormats = ((addFormatsModule as unknown as { default?: AddFormats }).default ?? addFormatsModule) as unknown as AddFormats

function makeAjv (coerce: boolean, validateSchema: boolean): Ajv {
  // Unlike Fastify's defaults: never drop unknown members silently (they are 422), report every
  // violation, and coerce only strings from the URL, never body values.
  const ajv = new Ajv({
    allErrors: true,
    removeAdditional: false,
    useDefaults: false,
    coerceTypes: coerce,
    strict: false,
    verbose: true,
    validateSchema,
  })
  addFormats(ajv, ['date-time', 'email', 'uri', 'uuid', 'int32', 'int64'])
  // `trimmedLength: { minimum, maximum }`: a string's length after trimming white space.
  ajv.addKeyword({
    keyword: 'trimmedLength',
    type: 'string',
    errors: true,
    validate: function trimmedLength (limits: { minimum: number, maximum: number }, data: string) {
      const n = [...data.trim()].length
      const self = trimmedLength as unknown as { errors: Partial<ErrorObject>[] }
      if (n < limits.minimum) {
        self.errors = [{ keyword: 'trimmedLength', params: { limit: limits.minimum, bound: 'min', blank: n === 0 } }]
        return false
      }
      if (n > limits.maximum) {
        self.errors = [{ keyword: 'trimmedLength', params: { limit: limits.maximum, bound: 'max' } }]
        return false
      }
      return true
    },
  })
  return ajv
}

/**
 * The validator compiler of one app: body schemas and URL schemas (params, query, headers)
 * each get their own ajv, both knowing the app's shared schemas (referenced by `$id`).
 */
export function createValidatorCompiler (shared: readonly object[]): FastifySchemaCompiler<unknown> & { body: Ajv } {
  // The shared schemas are checked against the JSON Schema meta-schema once, by the body instance:
  // compiling the meta-schema in both was half of this function's ~60 ms at start-up.
  const body = makeAjv(false, true)
  const url = makeAjv(true, false)
  for (const schema of shared) {
    body.addSchema(schema)
    url.addSchema(schema)
  }
  // Every route is registered once per version and prefix: equal schemas share one validator,
  // which more than halves the compiling at start-up. ajv's own cache is by object, not content.
  // Each is compiled on its first use, like the serializers (src/http/protocol/serialization.ts): most
  // routes' validators are not needed in a process's first second, and compiling them all was a
  // tenth of the start-up.
  const compiled = new Map<string, ValidateFunction>()
  const compiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
    const key = `${httpPart === 'body' ? 'body' : 'url'}\u0000${JSON.stringify(schema)}`
    let validate = compiled.get(key)
    if (validate === undefined) {
      let real: ValidateFunction | undefined
      const compile = () => httpPart === 'body'
        ? body.compile(schema as object) as ValidateFunction
        : strictIntegers(url.compile(schema as object), schema as { properties?: Record<string, { type?: unknown }> })
      const lazy = function (data: unknown) {
        real ??= compile()
        const ok = real(data)
        lazy.errors = real.errors
        return ok
      } as ValidateFunction
      validate = lazy
      compiled.set(key, validate)
    }
    return validate
  }
  return Object.assign(compiler, { body })
}

function codeFor (e: ErrorObject, context: string): FieldCode {
  // A schema may name the one code its value's rules report (a pattern-checked code: INVALID_FORMAT).
  const declared = (e.parentSchema as { 'x-error-code'?: FieldCode } | undefined)?.['x-error-code']
  if (declared !== undefined && e.keyword !== 'type') return declared
  switch (e.keyword) {
    case 'required': return 'REQUIRED'
    case 'additionalProperties': return context === 'body' ? 'UNKNOWN_FIELD' : 'UNKNOWN_PARAMETER'
    case 'type': return 'INVALID_TYPE'
    case 'minLength': return 'TOO_SHORT'
    case 'maxLength': return 'TOO_LONG'
    case 'minItems': return 'TOO_SHORT'
    case 'maxItems': return 'TOO_LONG'
    case 'minimum':
    case 'exclusiveMinimum':
      return typeof e.data === 'number' && e.data < 0 && Number(e.params.limit) >= 0 ? 'NEGATIVE_VALUE' : 'OUT_OF_RANGE'
    case 'maximum':
    case 'exclusiveMaximum':
      return 'OUT_OF_RANGE'
    case 'enum':
    case 'const':
      return 'INVALID_VALUE'
    case 'format': return e.params.format === 'email' ? 'INVALID_EMAIL' : 'INVALID_FORMAT'
    case 'pattern': return 'INVALID_FORMAT'
    case 'trimmedLength': return e.params.blank ? 'BLANK' : (e.params.bound === 'max' ? 'TOO_LONG' : 'TOO_SHORT')
    default: return 'INVALID_VALUE'
  }
}

function fieldOf (e: ErrorObject, context: string): string {
  const base = e.instancePath.replace(/^\//, '').replaceAll('~1', '/').replaceAll('~0', '~')
  const child = e.keyword === 'required'
    ? String(e.params.missingProperty)
    : e.keyword === 'additionalProperties' ? String(e.params.additionalProperty) : ''
  const field = [base, child].filter(Boolean).join('/')
  return field === '' && context !== 'body' ? context : field
}

const FORMAT_MESSAGES: Readonly<Record<string, Message>> = {
  email: message('EMAIL'),
  'date-time': message('DATE_TIME'),
  date: message('DATE'),
  uri: message('URL'),
  uuid: message('UUID'),
}

/**
 * The catalogue message of one violated rule, from the schema keyword and its parameters: the
 * same rule reads the same on every field and in every language (src/messages.ts).
 */
function messageOf (e: ErrorObject, context: string): Message {
  const limit = Number(e.params.limit)
  switch (e.keyword) {
    case 'required': return message('REQUIRED')
    case 'additionalProperties': return context === 'body' ? message('UNKNOWN_MEMBER') : message('UNKNOWN_PARAMETER')
    case 'type':
      if (e.params.decimal === true) return message('DECIMAL_INTEGER')
      return message('TYPE', { types: [e.params.type].flat().flatMap(t => String(t).split(',')) as JsonType[] })
    case 'minLength': return message('MIN_LENGTH', { limit })
    case 'maxLength': return message('MAX_LENGTH', { limit })
    case 'trimmedLength':
      if (e.params.blank === true) return message('BLANK')
      return e.params.bound === 'max' ? message('MAX_LENGTH', { limit }) : message('MIN_LENGTH', { limit })
    case 'minItems': return message('MIN_ITEMS', { limit })
    case 'maxItems': return message('MAX_ITEMS', { limit })
    case 'uniqueItems': return message('DUPLICATE_ITEMS')
    case 'minimum': return message('MINIMUM', { limit })
    case 'maximum': return message('MAXIMUM', { limit })
    case 'exclusiveMinimum': return message('ABOVE', { limit })
    case 'exclusiveMaximum': return message('BELOW', { limit })
    case 'enum': return message('ONE_OF', { allowed: e.params.allowedValues as unknown[] })
    case 'const': return message('EQUAL', { value: e.params.allowedValue })
    case 'format': return FORMAT_MESSAGES[String(e.params.format)] ?? message('FORMAT')
    // A pattern is the validator's business; what the person sent is theirs: only white space is blank.
    case 'pattern': return typeof e.data === 'string' && e.data.trim() === '' ? message('BLANK') : message('FORMAT')
    default: return message('INVALID')
  }
}

const INTEGER_TEXT = /^-?(0|[1-9]\d*)$/

/**
 * ajv's coercion reads "0x1", "1e0", " 1" and "01" as 1, which would give one row many URLs:
 * an integer in a path or query must be written in plain decimal.
 */
function strictIntegers (validate: ValidateFunction, schema: { properties?: Record<string, { type?: unknown }> }): ValidateFunction {
  const integers = Object.entries(schema.properties ?? {}).filter(([, s]) => s.type === 'integer').map(([name]) => name)
  if (integers.length === 0) return validate
  const wrapped = function (data: Record<string, unknown>) {
    const bad = integers.filter(name => typeof data?.[name] === 'string' && !INTEGER_TEXT.test(data[name] as string))
    if (bad.length > 0) {
      wrapped.errors = bad.map(name => ({ keyword: 'type', instancePath: `/${name}`, schemaPath: `#/properties/${name}/type`, params: { type: 'integer', decimal: true }, data: data[name] }))
      return false
    }
    const ok = validate(data)
    wrapped.errors = validate.errors
    return ok
  } as ValidateFunction
  return wrapped
}

/** A body with thousands of violations gets the first ones: enough to fix, not megabytes to read. */
export const MAX_FIELD_ERRORS = 100

/** Turns ajv's errors into the API's `errors[]`: one entry per violated constraint. */
export function toFieldErrors (errors: readonly ErrorObject[], context: string): FieldError[] {
  const out: FieldError[] = []
  const seen = new Set<string>()
  // Where a value failed a rule other than its type, or something within it failed, a branch of a
  // union took its type: the other branches' "wrong type" is noise. One field, one problem.
  const typed = new Set<string>()
  for (const e of errors) {
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if') continue
    let path = e.instancePath
    if (e.keyword !== 'type') typed.add(path)
    while (path !== '') {
      path = path.slice(0, path.lastIndexOf('/'))
      typed.add(path)
    }
  }
  for (const e of errors) {
    if (out.length >= MAX_FIELD_ERRORS) break
    // anyOf/oneOf repeat what their branches said; the branches carry the detail.
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if') continue
    if (e.keyword === 'type' && typed.has(e.instancePath)) continue
    // int32/int64 document a range that minimum/maximum and the integer type already enforce.
    if (e.keyword === 'format' && (e.params.format === 'int32' || e.params.format === 'int64')) continue
    const field = fieldOf(e, context)
    const code = codeFor(e, context)
    const key = `${field}\u0000${code}`
    if (seen.has(key)) continue
    seen.add(key)
    out.push(fieldError(field, code, messageOf(e, context)))
  }
  return out
}
