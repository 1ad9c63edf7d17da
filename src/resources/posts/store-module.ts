import type { StoreModule } from '../../store/module.ts'
import * as m0001 from './migrations/0001-content.ts'
import { RevisionsRepository } from './revisions/revisions-repository.ts'
import * as m0002 from './migrations/0002-editorial.ts'
import * as m0003 from './migrations/0003-tag-order.ts'
import * as m0004 from './migrations/0004-review.ts'
import * as m0005 from './migrations/0005-feature-image.ts'
import * as m0006 from './migrations/0006-slug-counters.ts'
import * as m0007 from './migrations/0007-search-queue.ts'
import * as m0008 from './migrations/0008-write-indexes.ts'
import * as m0009 from './migrations/0009-authors.ts'
import * as m0010 from './migrations/0010-site-words.ts'
import { PostsRepository } from './posts-repository.ts'
import { PreviewLinksRepository, type PreviewLinkStore } from './preview-links/preview-links-repository.ts'
import type { PostStore, RevisionStore } from './store.ts'

/**
 * Posts' first tables were made by the core's first migration (`0001-initial`, per database,
 * frozen), from before resources had folders; what posts added since is theirs.
 */
export const postsStore: StoreModule = {
  name: 'posts',
  migrations: {
    'posts/0001-content': m0001.migration,
    'posts/0002-editorial': m0002.migration,
    'posts/0003-tag-order': m0003.migration,
    'posts/0004-review': m0004.migration,
    'posts/0005-feature-image': m0005.migration,
    'posts/0006-slug-counters': m0006.migration,
    'posts/0007-search-queue': m0007.migration,
    'posts/0008-write-indexes': m0008.migration,
    'posts/0009-authors': m0009.migration,
    'posts/0010-site-words': m0010.migration,
  },
  repository: (db, dialect): PostStore => new PostsRepository(db, dialect),
}

/** Posts' revisions, a repository of their own (`uow.revisions`); their table is made by posts' migrations. */
export const revisionsStore: StoreModule = {
  name: 'revisions',
  migrations: {},
  repository: (db, dialect): RevisionStore => new RevisionsRepository(db, dialect),
}

/** Posts' preview links (`uow.previewLinks`); their table is made by posts' migrations. */
export const previewLinksStore: StoreModule = {
  name: 'previewLinks',
  migrations: {},
  repository: (db, dialect): PreviewLinkStore => new PreviewLinksRepository(db, dialect),
}
