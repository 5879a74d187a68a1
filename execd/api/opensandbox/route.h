/*
 * route.h -- the route table and every endpoint handler, grouped by file.
 *
 * Handlers follow http.h's contract: loop thread, reply exactly once
 * before returning.
 */
#ifndef EXECD_ROUTE_H
#define EXECD_ROUTE_H

#include <stdbool.h>
#include <stddef.h>

#include "../../transport/http.h"

extern const struct http_route	route_table[];
extern const size_t		route_count;

/* route_sys.c: health and metrics. */
void	route_ping(struct http_req *);
void	route_metrics(struct http_req *);
void	route_metrics_watch(struct http_req *);

/* route_init.c: runtime initialisation. */
void	route_ready(struct http_req *);
void	route_init(struct http_req *);

/* route_context.c: code contexts. */
void	route_context_create(struct http_req *);
void	route_context_list(struct http_req *);
void	route_context_delete_lang(struct http_req *);
void	route_context_get(struct http_req *);
void	route_context_delete(struct http_req *);
void	route_context_connection(struct http_req *);

/* route_code.c: code runs. */
void	route_code_run(struct http_req *);

/* route_batch.c: batches of code runs, each in a fresh context. */
void	route_code_batch(struct http_req *);

/* route_cmd.c: shell commands, and the interrupt of commands and code. */
void	route_command_run(struct http_req *);
void	route_command_status(struct http_req *);
void	route_command_logs(struct http_req *);
void	route_command_stream(struct http_req *);
void	route_command_stdin(struct http_req *);
void	route_interrupt(struct http_req *);

/* route_isolated.c: isolated sessions, /v1/isolated. */
void	route_iso_capabilities(struct http_req *);
void	route_iso_create(struct http_req *);
void	route_iso_list(struct http_req *);
void	route_iso_get(struct http_req *);
void	route_iso_delete(struct http_req *);
void	route_iso_run(struct http_req *);
void	route_iso_run_get(struct http_req *);
void	route_iso_logs(struct http_req *);
void	route_iso_diff(struct http_req *);
void	route_iso_commit(struct http_req *);
/* route_session.c: bash sessions. */
void	route_session_create(struct http_req *);
void	route_session_run(struct http_req *);
void	route_session_delete(struct http_req *);

/* route_pty.c: interactive terminals over WebSocket. */
void	route_pty_create(struct http_req *);
void	route_pty_get(struct http_req *);
void	route_pty_delete(struct http_req *);
void	route_pty_ws(struct http_req *);

/* route_computer.c: the X display's screen, mouse, keyboard, windows. */
void	route_computer_screen(struct http_req *);
void	route_computer_screenshot(struct http_req *);
void	route_computer_mouse(struct http_req *);
void	route_computer_keyboard(struct http_req *);
void	route_computer_windows(struct http_req *);
void	route_computer_focus(struct http_req *);

/* route_services.c: the supervised services of the policy file. */
void	route_services(struct http_req *);

/* route_proxy.c: the reverse proxy to servers on 127.0.0.1. */
void	route_proxy(struct http_req *);

/* route_fs.c: operations on lists of files and directories, in JSON. */
void	route_files_info(struct http_req *);
void	route_files_delete(struct http_req *);
void	route_files_perms(struct http_req *);
void	route_files_move(struct http_req *);
void	route_files_replace(struct http_req *);
void	route_dirs_make(struct http_req *);
void	route_dirs_delete(struct http_req *);
/* A FileInfo object (fileops_info_json()). */
struct fs_info;
json_t	*route_fs_info_json(const char *path, const struct fs_info *);

/* route_fs_tree.c: a tree listed, searched or grepped, in JSON. */
void	route_dirs_list(struct http_req *);
void	route_files_search(struct http_req *);
void	route_files_grep(struct http_req *);

/* route_fs_watch.c: the stream of a path's filesystem events. */
void	route_files_watch(struct http_req *);

/* route_upload.c: multipart uploads, streamed to disk. */
void	route_files_upload(struct http_req *);

/* route_download.c: a file's bytes, a byte range or a window of lines. */
void	route_files_download(struct http_req *);

/*
 * route_fs_as.c: /v1/filesystem/{uid}/{gid}/..., the routes above run as
 * that user (one per route, named after it).
 */
void	route_files_info_as(struct http_req *);
void	route_files_delete_as(struct http_req *);
void	route_files_perms_as(struct http_req *);
void	route_files_move_as(struct http_req *);
void	route_files_search_as(struct http_req *);
void	route_files_replace_as(struct http_req *);
void	route_files_upload_as(struct http_req *);
void	route_files_download_as(struct http_req *);
void	route_dirs_list_as(struct http_req *);
void	route_dirs_make_as(struct http_req *);
void	route_dirs_delete_as(struct http_req *);
/* route_isolated.c: the same file routes on an isolated session's view. */
void	route_files_info_iso(struct http_req *);
void	route_files_delete_iso(struct http_req *);
void	route_files_perms_iso(struct http_req *);
void	route_files_move_iso(struct http_req *);
void	route_files_search_iso(struct http_req *);
void	route_files_replace_iso(struct http_req *);
void	route_files_upload_iso(struct http_req *);
void	route_files_download_iso(struct http_req *);
void	route_dirs_list_iso(struct http_req *);
void	route_dirs_make_iso(struct http_req *);
void	route_dirs_delete_iso(struct http_req *);

/* route_archive.c: a directory streamed as tar. */
void	route_files_archive(struct http_req *);

/* route_ckpt.c: workspace checkpoints. */
void	route_files_checkpoint(struct http_req *);
void	route_files_restore(struct http_req *);
void	route_files_checkpoint_delete(struct http_req *);
void	route_files_checkpoint_list(struct http_req *);

#endif
