import { postEventTypes } from '../../domain/events.ts'
import type { PostChanged } from '../../domain/post-service.ts'
import type { EventStore } from '../../store/store.ts'
import { renderPost } from './representation.ts'

/**
 * Records the events of a post's change in the unit of work that made it (contract §12): `data` is
 * the version-1 post after the change (`post.deleted`: `{id}`); the author and admins see them on the
 * stream, everyone when the post is published after the change (or was, for `post.deleted`).
 *
 * @example
 * new PostService(uow.posts, undefined, postEvents(uow.events)).update(id, principal, build)
 */
export function postEvents (events: Pick<EventStore, 'record'>): PostChanged {
  return (before, after) => {
    const post = after ?? before!
    const data = after === null ? { id: post.id } : renderPost(after, 1, '')
    const visible = after === null ? before?.status === 'published' : after.status === 'published'
    events.record(...postEventTypes(before?.status ?? null, after?.status ?? null).map(type => ({ type, data, owner: post.author, public: visible })))
  }
}
