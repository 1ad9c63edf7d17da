import { type Expression, type ExpressionBuilder, type SelectQueryBuilder, type SqlBool, sql } from 'kysely'
import type { ListPage, ListQuery, SortTerm } from './store.ts'

function flip (d: 'asc' | 'desc'): 'asc' | 'desc' {
  return d === 'asc' ? 'desc' : 'asc'
}

/**
 * Keyset condition "strictly after `values` in `sort` order". When every term runs the same
 * way it is one row-value comparison, which both databases answer with an index range scan.
 */
function keysetCondition<DB, TB extends keyof DB> (
  eb: ExpressionBuilder<DB, TB>,
  sort: readonly SortTerm[],
  values: readonly unknown[],
  column: (key: string) => string
): Expression<SqlBool> {
  const sameWay = sort.every(t => t.direction === sort[0]!.direction)
  if (sameWay) {
    const op = sort[0]!.direction === 'asc' ? '>' : '<'
    const cols = sql.join(sort.map(t => sql.ref(column(t.key))))
    const vals = sql.join(values.map(v => sql.val(v)))
    return sql<SqlBool>`(${cols}) ${sql.raw(op)} (${vals})`
  }
  const ors: Expression<SqlBool>[] = sort.map((term, i) => {
    const ands = sort.slice(0, i).map((t, j) => sql<SqlBool>`${sql.ref(column(t.key))} = ${values[j]}`)
    ands.push(sql<SqlBool>`${sql.ref(column(term.key))} ${sql.raw(term.direction === 'asc' ? '>' : '<')} ${values[i]}`)
    return eb.and(ands)
  })
  return eb.or(ors)
}

/** The values a page query binds, in the order `pageQuery` asks for them: the keyset position's values, the limit, the offset. */
export function pageValues (query: ListQuery<string, unknown>): unknown[] {
  const values: unknown[] = [...(query.after ?? query.before ?? []), query.limit + 1]
  if (query.offset) values.push(query.offset)
  return values
}

/**
 * `base` with the keyset condition, order, limit and offset of `query`. `value(i)` is what to bind
 * for the i-th of `pageValues(query)`: the value itself, or a placeholder of a prepared query.
 */
export function pageQuery<DB, TB extends keyof DB & string, O> (
  base: SelectQueryBuilder<DB, TB, O>,
  query: ListQuery<string, unknown>,
  column: (key: string) => string,
  value: (i: number) => unknown
): SelectQueryBuilder<DB, TB, O> {
  const backwards = query.before !== undefined
  const order = backwards ? query.sort.map(t => ({ key: t.key, direction: flip(t.direction) })) : query.sort
  const position = query.after ?? query.before
  let q = base
  if (position !== undefined) {
    const values = position.map((_, i) => value(i))
    q = q.where(eb => keysetCondition(eb as ExpressionBuilder<DB, TB>, order, values, column))
  }
  for (const term of order) q = q.orderBy(sql.ref(column(term.key)), term.direction)
  const next = position?.length ?? 0
  q = q.limit(value(next) as number)
  if (query.offset) q = q.offset(value(next + 1) as number)
  return q
}

/** The page from the rows a page query read (one more than the limit when more follow). */
export function pageOf<O> (rows: O[], query: ListQuery<string, unknown>, total: number | undefined): ListPage<O> {
  const more = rows.length > query.limit
  const items = more ? rows.slice(0, query.limit) : rows
  if (query.before !== undefined) items.reverse()
  return total === undefined ? { items, more } : { items, more, total }
}

/**
 * Reads one page of any list: offset or keyset paging over `sort`, which must end with a unique key.
 * Shared by every collection so that paging behaves the same everywhere.
 */
export async function readPage<DB, TB extends keyof DB & string, O> (
  base: SelectQueryBuilder<DB, TB, O>,
  query: ListQuery<string, unknown>,
  column: (key: string) => string,
  countQuery: () => Promise<number>
): Promise<ListPage<O>> {
  const values = pageValues(query)
  const q = pageQuery(base, query, column, i => values[i])
  const [rows, total] = await Promise.all([q.execute(), query.count ? countQuery() : Promise.resolve(undefined)])
  return pageOf(rows, query, total)
}
