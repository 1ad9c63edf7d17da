import type { Kysely } from 'kysely'
import type { StoreModule } from '../../store/module.ts'
import type { Database } from '../../store/tables.ts'

/** Old slugs given to a post from outside (a move from another service): claimed only while free. */
export interface AliasStore {
  /**
   * Makes each `slug` an old slug of its post, unless any post (that one included) holds it already:
   * of each post, how many it got. One statement per 500 claims.
   */
  claimMany (claims: ReadonlyArray<{ readonly postId: number, readonly slug: string }>): Promise<Map<number, number>>
}

const CLAIMS_PER_STATEMENT = 500

class AliasesRepository implements AliasStore {
  constructor (private readonly db: Kysely<Database>) {}

  async claimMany (claims: ReadonlyArray<{ readonly postId: number, readonly slug: string }>): Promise<Map<number, number>> {
    const got = new Map<number, number>()
    for (let at = 0; at < claims.length; at += CLAIMS_PER_STATEMENT) {
      // The slug's primary key settles a race with any other claim, as for a post's own slug; a slug
      // twice in one statement is inserted once.
      const rows = await this.db.insertInto('post_slugs')
        .values(claims.slice(at, at + CLAIMS_PER_STATEMENT).map(c => ({ slug: c.slug, post_id: c.postId })))
        .onConflict(oc => oc.column('slug').doNothing())
        .returning('post_id')
        .execute()
      for (const r of rows) got.set(Number(r.post_id), (got.get(Number(r.post_id)) ?? 0) + 1)
    }
    return got
  }
}

declare module '../../store/store.ts' { interface Repositories { readonly postAliases: AliasStore } }

/** A repository of its own (`uow.postAliases`) on posts' post_slugs table; no tables of its own. */
export const aliasesStore: StoreModule = {
  name: 'postAliases',
  migrations: {},
  repository: (db): AliasStore => new AliasesRepository(db),
}
