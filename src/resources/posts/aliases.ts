import type { Kysely } from 'kysely'
import type { StoreModule } from '../../store/module.ts'
import type { Database } from '../../store/tables.ts'

/** Old slugs given to a post from outside (a move from another service): claimed only while free. */
export interface AliasStore {
  /** Makes `slug` an old slug of post `postId`; false when any post (this one included) holds it already. */
  claim (postId: number, slug: string): Promise<boolean>
}

class AliasesRepository implements AliasStore {
  constructor (private readonly db: Kysely<Database>) {}

  async claim (postId: number, slug: string): Promise<boolean> {
    // The slug's primary key settles a race with any other claim, as for a post's own slug.
    const rows = await this.db.insertInto('post_slugs').values({ slug, post_id: postId })
      .onConflict(oc => oc.column('slug').doNothing())
      .returning('slug')
      .execute()
    return rows.length === 1
  }
}

declare module '../../store/store.ts' { interface Repositories { readonly postAliases: AliasStore } }

/** A repository of its own (`uow.postAliases`) on posts' post_slugs table; no tables of its own. */
export const aliasesStore: StoreModule = {
  name: 'postAliases',
  migrations: {},
  repository: (db): AliasStore => new AliasesRepository(db),
}
