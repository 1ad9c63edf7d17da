import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import { type TProperties, Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Lru } from 'toad-cache'
import { AppError, fieldError, type FieldError, validationFailed } from '../../errors.ts'
import { message } from '../../messages.ts'
import type { ListPage, SortTerm } from '../../store/store.ts'
import { fieldName } from '../../store/tables.ts'
import { type Audience, appendVary } from '../pipeline/caching.ts'
import { sendRepresentation, weakEtag } from './conditional.ts'
import { appendLink } from '../protocol/links.ts'
import { applied, prefers } from './prefer.ts'
import { linkBase } from '../protocol/versioning.ts'

export const DEFAULT_PAGE_SIZE = 20
export const MAX_PAGE_SIZE = 100

/** Query parameters every collection shares; a collection adds its filters. */
export const pagingQueryProperties = {
  sort: Type.String({ minLength: 1, maxLength: 200, description: 'Comma-separated sort keys: `-key` or `key:desc` for descending, `key` or `key:asc` for ascending. `id` is always added as the last tie-breaker.' }),
  page: Type.Integer({ minimum: 1, maximum: 10_000_000, description: 'Page number (offset paging). Cannot be combined with `cursor`.' }),
  limit: Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, description: `Page size, ${DEFAULT_PAGE_SIZE} by default, at most ${MAX_PAGE_SIZE} (larger is rejected, not clamped).` }),
  per_page: Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, description: 'Synonym of `limit`.' }),
  fields: Type.String({ minLength: 1, maxLength: 500, description: 'Comma-separated fields; each item holds exactly these.' }),
  include: Type.String({ minLength: 1, maxLength: 200, description: 'Comma-separated related resources to embed.' }),
  cursor: Type.String({ minLength: 1, maxLength: 2000, description: 'Opaque position from a `Link: rel="next"` or `rel="prev"`. Cannot be combined with `page`.' }),
} satisfies TProperties

export interface PagingQuery {
  sort?: string
  page?: number
  limit?: number
  per_page?: number
  fields?: string
  include?: string
  cursor?: string
}

/** A collection declares what it can be sorted by, which fields it has, and what it can embed. */
export interface CollectionSpec<K extends string> {
  /** Binds cursors to their collection. */
  readonly name: string
  readonly sortKeys: readonly K[]
  readonly defaultSort: string
  readonly includes: readonly string[]
}

export interface ListRequest<K extends string> {
  readonly sort: readonly SortTerm<K>[]
  readonly limit: number
  /** Offset paging when set; keyset paging otherwise. */
  readonly page: number | null
  readonly after?: readonly (string | number)[]
  readonly before?: readonly (string | number)[]
  /** Names from `fields`, or null for the default item shape. */
  readonly fields: readonly string[] | null
  readonly include: readonly string[]
  readonly count: boolean
  /** Everything that decides which rows are listed and in what order; cursors carry its hash. */
  readonly signature: string
}

function parseSort<K extends string> (raw: string, spec: CollectionSpec<K>, errors: FieldError[]): SortTerm<K>[] {
  const terms: SortTerm<K>[] = []
  for (const part of raw.split(',').map(s => s.trim())) {
    let key: string = part
    let direction: 'asc' | 'desc' = 'asc'
    if (part.startsWith('-')) {
      key = part.slice(1)
      direction = 'desc'
    } else if (part.includes(':')) {
      const [k = '', d = '', ...rest] = part.split(':')
      key = k
      if ((d !== 'asc' && d !== 'desc') || rest.length > 0) {
        errors.push(fieldError('sort', 'INVALID_VALUE', message('SORT_DIRECTION', { value: part.slice(k.length + 1) })))
        continue
      }
      direction = d
    }
    if (!(spec.sortKeys as readonly string[]).includes(key)) {
      errors.push(fieldError('sort', 'INVALID_VALUE', message('SORT_KEY', { value: key, allowed: spec.sortKeys })))
      continue
    }
    if (terms.some(t => t.key === key)) {
      errors.push(fieldError('sort', 'INVALID_VALUE', message('SORT_REPEATED', { value: key })))
      continue
    }
    terms.push({ key: key as K, direction })
  }
  // The last tie-breaker makes the order total, in the direction of the last key.
  const last = terms.at(-1)
  if (last && !terms.some(t => t.key === 'id')) terms.push({ key: 'id' as K, direction: last.direction })
  return terms
}

function list (raw: string | undefined): string[] {
  return raw === undefined ? [] : raw.split(',').map(s => s.trim())
}

/**
 * Signs and checks cursors. A cursor is `<payload>.<mac>`: the payload holds the position and a
 * hash of the query it belongs to; the HMAC key is shared by every instance (the store keeps it).
 */
/**
 * `compute`, with its last 4 096 results kept by argument. Paging hashes the same few strings again
 * and again (every client's `next` link from page 1, the same list queries): a hash or an HMAC was
 * ~3% of a list request each. Bounded; a miss costs what `compute` costs.
 */
function memoized<T> (compute: (key: string) => T): (key: string) => T {
  const kept = new Lru<T>(4096)
  return key => {
    let value = kept.get(key)
    if (value === undefined) {
      value = compute(key)
      kept.set(key, value)
    }
    return value
  }
}

export class CursorCodec {
  private readonly mac: (payload: string) => Buffer

  constructor (secret: Buffer) {
    this.mac = memoized(payload => createHmac('sha256', secret).update(payload).digest().subarray(0, 16))
  }

  encode (direction: 'after' | 'before', values: readonly (string | number)[], signature: string): string {
    const payload = Buffer.from(JSON.stringify({ d: direction === 'after' ? 'a' : 'b', k: values, s: signature })).toString('base64url')
    return `${payload}.${this.mac(payload).toString('base64url')}`
  }

  /** The position, or throws 400 INVALID_CURSOR for a cursor altered or issued for another query. */
  decode (cursor: string, signature: string, keyCount: number): { direction: 'after' | 'before', values: (string | number)[] } {
    const invalid = new AppError('INVALID_CURSOR')
    const [payload, mac, extra] = cursor.split('.')
    if (!payload || !mac || extra !== undefined) throw invalid
    const given = Buffer.from(mac, 'base64url')
    const expected = this.mac(payload)
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid
    let data: unknown
    try {
      data = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
    } catch {
      throw invalid
    }
    const { d, k, s } = (data ?? {}) as { d?: unknown, k?: unknown, s?: unknown }
    if (s !== signature) throw new AppError('INVALID_CURSOR', 'The cursor belongs to another query (other filters or sort). Follow the links of one query, or start again.')
    if ((d !== 'a' && d !== 'b') || !Array.isArray(k) || k.length !== keyCount || !k.every(v => typeof v === 'string' || typeof v === 'number')) throw invalid
    return { direction: d === 'a' ? 'after' : 'before', values: k as (string | number)[] }
  }
}

/** A list query's signature: a hash of what decides its rows (its collection, sort and filters). */
const querySignature = memoized(query => createHash('sha256').update(query).digest('base64url').slice(0, 16))

/**
 * Reads the shared paging parameters of a list request. `filters` are the collection's own
 * parameters (already validated); `fieldNames` the field names the item representation knows.
 */
export function parseListRequest<K extends string> (
  req: FastifyRequest,
  query: PagingQuery,
  spec: CollectionSpec<K>,
  filters: Record<string, unknown>,
  fieldNames: readonly string[],
  cursors: CursorCodec
): ListRequest<K> {
  const errors: FieldError[] = []
  const sort = parseSort(query.sort ?? spec.defaultSort, spec, errors)
  if (query.limit !== undefined && query.per_page !== undefined && query.limit !== query.per_page) {
    errors.push(fieldError('per_page', 'CONFLICTING_PARAMETERS', message('SYNONYMS_DIFFER', { a: 'limit', b: 'per_page' })))
  }
  if (query.page !== undefined && query.cursor !== undefined) {
    errors.push(fieldError('cursor', 'CONFLICTING_PARAMETERS', message('PAGING_CONFLICT', { a: 'page', b: 'cursor' })))
  }
  let fields: string[] | null = null
  if (query.fields !== undefined) {
    fields = [...new Set(list(query.fields))]
    for (const f of fields) {
      if (!fieldNames.includes(f)) errors.push(fieldError('fields', 'INVALID_VALUE', message('UNKNOWN_FIELD_NAME', { value: f, allowed: fieldNames })))
    }
  }
  const include = list(query.include)
  for (const name of include) {
    if (!spec.includes.includes(name)) {
      errors.push(fieldError('include', 'INVALID_VALUE', spec.includes.length === 0
        ? message('NO_INCLUDES')
        : message('UNKNOWN_INCLUDE', { value: name, allowed: spec.includes })))
    }
  }
  if (errors.length > 0) throw validationFailed(errors)

  const signature = querySignature(JSON.stringify([spec.name, sort.map(t => `${t.key}:${t.direction}`), Object.entries(filters).filter(([, v]) => v !== undefined).sort()]))
  const base = {
    sort,
    limit: query.limit ?? query.per_page ?? DEFAULT_PAGE_SIZE,
    page: query.page ?? null,
    fields,
    include,
    count: prefers(req, 'count', 'exact'),
    signature,
  }
  if (query.cursor === undefined) return base
  const position = cursors.decode(query.cursor, signature, sort.length)
  return position.direction === 'after' ? { ...base, after: position.values } : { ...base, before: position.values }
}

/** The store's view of a list request: offset or keyset position, and whether to count. */
export function storeQueryOf<K extends string, F> (lr: ListRequest<K>, filter: F) {
  return {
    filter,
    sort: lr.sort,
    limit: lr.limit,
    ...(lr.page !== null ? { offset: (lr.page - 1) * lr.limit } : {}),
    ...(lr.after ? { after: lr.after } : {}),
    ...(lr.before ? { before: lr.before } : {}),
    // Offset paging needs the total for its `last` link.
    count: lr.count || lr.page !== null,
  }
}

function urlWith (req: FastifyRequest, set: Record<string, string | null>): string {
  const [path = '/', rawQuery = ''] = req.url.split(/\?(.*)/s, 2)
  const params = new URLSearchParams(rawQuery)
  for (const [k, v] of Object.entries(set)) {
    if (v === null) params.delete(k)
    else params.set(k, v)
  }
  const qs = params.toString()
  return qs === '' ? path : `${path}?${qs}`
}

/**
 * Paging travels in `Link` (RFC 8288), never in the body: `first`, `prev`, `next`, and for offset
 * paging `last`. With `Prefer: count=exact`, `X-Total-Count` and `Preference-Applied`.
 */
export function setPagingHeaders<T, K extends string> (
  req: FastifyRequest,
  reply: FastifyReply,
  lr: ListRequest<K>,
  page: ListPage<T>,
  valuesOf: (item: T) => (string | number)[],
  cursors: CursorCodec
): void {
  const link = (rel: string, url: string) => appendLink(reply, `<${url}>; rel="${rel}"`)
  if (lr.page !== null) {
    const lastPage = Math.max(1, Math.ceil((page.total ?? 0) / lr.limit))
    link('first', urlWith(req, { page: '1', cursor: null }))
    if (lr.page > 1) link('prev', urlWith(req, { page: String(Math.min(lr.page - 1, lastPage)), cursor: null }))
    if (page.more) link('next', urlWith(req, { page: String(lr.page + 1), cursor: null }))
    link('last', urlWith(req, { page: String(lastPage), cursor: null }))
  } else {
    const first = page.items[0]
    const last = page.items.at(-1)
    link('first', urlWith(req, { cursor: null, page: null }))
    const backwards = lr.before !== undefined
    const hasPrev = backwards ? page.more : lr.after !== undefined
    const hasNext = backwards ? true : page.more
    if (hasPrev && first !== undefined) link('prev', urlWith(req, { cursor: cursors.encode('before', valuesOf(first), lr.signature) }))
    if (hasNext && last !== undefined) link('next', urlWith(req, { cursor: cursors.encode('after', valuesOf(last), lr.signature) }))
  }
  if (lr.count && page.total !== undefined) {
    reply.header('x-total-count', String(page.total))
    applied(reply, 'count=exact')
  }
  // `Prefer: count=exact` changes the response (X-Total-Count), so caches must key on it.
  appendVary(reply, 'Prefer')
}

/** An item's values for the sort keys, in order (what a keyset cursor carries): key `created_at` is the item's `createdAt`. */
export function sortValuesOf (item: object, sort: readonly SortTerm[]): (string | number)[] {
  return sort.map(t => (item as Record<string, string | number>)[fieldName(t.key)]!)
}

/**
 * Sends one page of any collection: its paging links, a weak ETag from what decides its bytes
 * (the query, the shape asked for, each row's revision and the paging headers; not a second
 * serialisation of the page), and the rendered items.
 */
export function sendPage<T extends { id: number | string }, K extends string> (
  req: FastifyRequest,
  reply: FastifyReply,
  lr: ListRequest<K>,
  page: ListPage<T>,
  cursors: CursorCodec,
  opts: {
    render: (item: T) => unknown
    audience: Audience
    sortValue?: ((item: T, term: SortTerm) => string | number) | undefined
    /** What decides an item's bytes besides the query; by default its id, revision and `updatedAt`. */
    version?: ((item: T) => string) | undefined
  }
): FastifyReply {
  const sortValue = opts.sortValue
  setPagingHeaders(req, reply, lr, page, sortValue === undefined ? item => sortValuesOf(item, lr.sort) : item => lr.sort.map(t => sortValue(item, t)), cursors)
  const version = opts.version ?? ((p: T) => { const r = p as unknown as { revision: number, updatedAt: string }; return `${p.id}:${r.revision}:${r.updatedAt}` })
  const rows = page.items.map(version).join(',')
  const shape = [lr.signature, req.apiVersion, linkBase(req), lr.fields?.join(',') ?? '', lr.include.join(',')]
  const etag = weakEtag([...shape, rows, reply.getHeader('link'), reply.getHeader('x-total-count')].map(h => String(h ?? '')).join('\n'))
  return sendRepresentation(req, reply, page.items.map(opts.render), { etag, audience: opts.audience })
}
