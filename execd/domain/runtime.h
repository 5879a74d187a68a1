/*
 * runtime.h -- runtime initialisation: the binding POST /internal/init
 * gives a pooled or restored sandbox (its id, generation, access token
 * digest, environment), whether execd is ready, and the request that
 * carries a binding, parsed and checked as upstream 1.1.1 checks it.
 *
 * The binding replaces the previous one whole.  Commands see its
 * environment under the EXECD_ENVS file and the request's envs, with
 * OPENSANDBOX_ID forced to the sandbox id (runtime_env_over, which
 * main.c hands envfile.h as every overlay's last step).  The HTTP
 * side of a binding (which token is accepted, whether routes are held)
 * is the route's to tell http.c; nothing here knows HTTP.  The parser is
 * pure (any thread); the state is the loop thread's.
 */
#ifndef EXECD_RUNTIME_H
#define EXECD_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define RUNTIME_MD_LEN		32	/* SHA-256 of the token */
#define RUNTIME_ID_MAX		128	/* bytes of a sandbox id */
#define RUNTIME_ENV_KEY_MAX	256
#define RUNTIME_ATTRS_MAX	64	/* telemetry attributes */
#define RUNTIME_ATTR_KEY_MAX	128
#define RUNTIME_ATTR_VALUE_MAX	1024
#define RUNTIME_HASH_PREFIX	"sha256:"

/* A POST /internal/init body, parsed and checked. */
struct runtime_req {
	char		*sandbox_id;	/* trimmed, 1..RUNTIME_ID_MAX bytes */
	uint64_t	 generation;	/* > 0 */
	bool		 restart;	/* entrypointPolicy "restart" */
	bool		 has_hash;
	unsigned char	 hash[RUNTIME_MD_LEN];
	json_t		*envs;		/* object of strings, never NULL */
	json_t		*lifecycle;	/* an object, or NULL: keep the
					   template's hooks */
	json_t		*attrs;		/* telemetry attributes, the reserved
					   ones dropped; never NULL */
	bool		 preserve;	/* preserveRuntimeState */
	json_t		*warnings;	/* array of strings, never NULL */
};

/*
 * Parse and check n bytes of a request body into out.  0, or -EINVAL
 * with upstream's message in err: "invalid runtime init request: <why>"
 * when the body is not a JSON object of the right types (unknown fields
 * are ignored, null is as absent), else the bare message of the rule
 * broken ("sandboxId must not be blank", "generation must be a positive
 * integer", ...).  out is filled only on success; runtime_req_reset()
 * frees it.  Pure: any thread.
 */
int	 runtime_req_parse(const char *body, size_t n, struct runtime_req *out,
	    char *err, size_t errlen);
void	 runtime_req_reset(struct runtime_req *);
/*
 * "sha256:<64 hex digits>", blanks around it ignored, into md.  0, or
 * -EINVAL with upstream's message ("access token hash must use
 * sha256:<hex> format", "... is not valid hex: ...", "... must be 32 hex
 * bytes, got N").  Pure.
 */
int	 runtime_hash_parse(const char *s, unsigned char *md, char *err,
	    size_t errlen);
/*
 * Whether the variable name k is execd's own configuration, never set by
 * a binding (upstream's list, any case).  Pure.
 */
bool	 runtime_env_reserved(const char *k);

/*
 * Start: without gated execd is ready at once (no initialisation is
 * awaited); with it, not until runtime_set_ready().
 */
void	 runtime_start(bool gated);
void	 runtime_shutdown(void);	/* forget the binding */
bool	 runtime_ready(void);
/* Started with gated, and not yet ready: an init is awaited. */
bool	 runtime_awaited(void);
void	 runtime_set_ready(bool);
/* Whether an init has bound this execd (its id is then not NULL). */
bool	 runtime_bound(void);
const char *runtime_sandbox_id(void);	/* NULL before the first bind */
uint64_t runtime_generation(void);	/* 0 before the first bind */
/* The bound token's digest, or NULL when the binding has none. */
const unsigned char *runtime_token_md(void);
/*
 * Replace the binding with req's: id, generation, token, environment,
 * telemetry attributes (taken from req, which is then reset).
 */
void	 runtime_bind(struct runtime_req *req);
/*
 * What a command's environment adds to execd's: the binding's variables
 * under over (the EXECD_ENVS file's and the request's, an object of
 * strings), OPENSANDBOX_ID over all when bound.  Takes over; returns a
 * new object.
 */
json_t	*runtime_env_over(json_t *over);
/*
 * The environment of a bash session, a terminal or a lifecycle hook, as
 * upstream gives it: execd's without its configuration names
 * (runtime_env_reserved), under the binding's variables, under the
 * EXECD_ENVS file's, OPENSANDBOX_ID the sandbox id when bound.  A new
 * NULL-terminated array; runtime_env_free() frees it.  Loop thread.
 */
char	**runtime_env_child(void);
void	 runtime_env_free(char **env);

#endif
