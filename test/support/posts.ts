import type { Principal } from '../../src/domain/principal.ts'
import type { Post, PostInput, PostWrite } from '../../src/resources/posts/post.ts'
import { PostService } from '../../src/resources/posts/post-service.ts'
import { postWrite } from '../../src/resources/posts/post-write.ts'
import type { Store, UnitOfWork } from '../../src/store/store.ts'

/** A post's fields as a client sends them: a title at least; the rest default as a request's do. */
export type PostFields = Partial<PostInput> & Pick<PostInput, 'title'>

function inputOf (fields: PostFields): PostInput {
  return { content: '', status: 'published', tags: [], excerpt: null, ...fields }
}

/** What a GET-modify-PUT of `post` sends back unchanged. */
function inputOfPost (post: Post): PostInput {
  return {
    title: post.title,
    content: post.content,
    status: post.status,
    slug: post.slug,
    tags: post.tags,
    excerpt: post.excerptDerived ? null : post.excerpt,
    publishAt: post.publishAt,
    metaTitle: post.metaTitle,
    metaDescription: post.metaDescription,
    canonicalUrl: post.canonicalUrl,
  }
}

/**
 * A post made as the API makes one: by the service, so by the rules of posts (its slug, HTML,
 * excerpt, `published_at`) with its first revision, by `author` at `now`. In `on`'s unit of work,
 * or in a unit of its own when `on` is the store.
 */
export async function createPost (on: Store | UnitOfWork, fields: PostFields, { author = 'alice', now = new Date() } = {}): Promise<Post> {
  const principal: Principal = { subject: author, scopes: new Set(['posts:write']), kind: 'jwt' }
  const create = async (uow: UnitOfWork) => await new PostService(uow, { revisionsKeep: 50, clock: { now: () => now } }).create(inputOf(fields), principal)
  return 'transaction' in on ? await on.transaction(create) : await create(on)
}

/**
 * What the service has the store write when `fields` change `current` at `now`, decided by the
 * rules of posts: for a test of the store's own work (its compare-and-set) on a replace.
 */
export function writeOver (current: Post, fields: Partial<PostInput>, now = new Date()): PostWrite {
  return postWrite({ ...inputOfPost(current), ...fields }, current, now)
}
