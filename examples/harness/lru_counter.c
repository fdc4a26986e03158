/*
 * The counter-based LRU evictor of the Dynamo mocker (lib/llm/src/mocker/evictor.rs, the
 * counter rewrite) written in C, speaking kvmodel's harness protocol (docs/harness.md):
 * one JSON request per line on stdin, one JSON response per line on stdout.
 *
 *   insert {object}      the object's counter becomes ++positive (most recently used)
 *   push_front {object}  the object's counter becomes --negative (next to be evicted)
 *   remove {object}      true when the object was present
 *   evict {}             the object with the smallest counter, removed; null when empty
 *   len {}               how many objects are held
 *
 * Objects are kept as their JSON text (an integer or a string), compared byte for byte.
 * Build: cc -O2 -o lru_counter lru_counter.c.  Check: kvmodel conform --target exec
 * --component lru_evictor_counter -- ./lru_counter.  "./lru_counter --bug evict_newest" plants a
 * bug (evict takes the largest counter) so that the check has something to find.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *obj;  /* JSON text of the object */
    long long counter;
} entry;

static entry *table = NULL;
static size_t used = 0, cap = 0;
static long long positive = 0, negative = 0;
static int bug_evict_newest = 0;

/* ---- a small JSON reader: enough to find top-level keys and copy values as text ---- */

static const char *skip_ws(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    return p;
}

static const char *skip_string(const char *p) { /* p at the opening quote */
    p++;
    while (*p && *p != '"') {
        if (*p == '\\' && p[1]) p++;
        p++;
    }
    return *p ? p + 1 : NULL;
}

static const char *skip_value(const char *p) {
    p = skip_ws(p);
    if (*p == '"') return skip_string(p);
    if (*p == '{' || *p == '[') {
        char open = *p, close = open == '{' ? '}' : ']';
        int depth = 0;
        while (*p) {
            if (*p == '"') {
                p = skip_string(p);
                if (!p) return NULL;
                continue;
            }
            if (*p == open) depth++;
            if (*p == close && --depth == 0) return p + 1;
            p++;
        }
        return NULL;
    }
    while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n') p++;
    return p;
}

/* The value of top-level key `key` in the object `json` as a fresh string, or NULL. */
static char *get(const char *json, const char *key) {
    const char *p = skip_ws(json);
    if (*p != '{') return NULL;
    p++;
    size_t klen = strlen(key);
    for (;;) {
        p = skip_ws(p);
        if (*p != '"') return NULL;
        const char *kstart = p + 1, *kend = skip_string(p);
        if (!kend) return NULL;
        p = skip_ws(kend);
        if (*p != ':') return NULL;
        const char *vstart = skip_ws(p + 1), *vend = skip_value(vstart);
        if (!vend) return NULL;
        if ((size_t)(kend - 1 - kstart) == klen && strncmp(kstart, key, klen) == 0) {
            char *out = malloc((size_t)(vend - vstart) + 1);
            memcpy(out, vstart, (size_t)(vend - vstart));
            out[vend - vstart] = 0;
            return out;
        }
        p = skip_ws(vend);
        if (*p == ',') p++;
        else return NULL;
    }
}

/* ---- the evictor ---- */

static long find(const char *obj) {
    for (size_t i = 0; i < used; i++)
        if (strcmp(table[i].obj, obj) == 0) return (long)i;
    return -1;
}

static void drop_at(size_t i) {
    free(table[i].obj);
    table[i] = table[--used];
}

static void set_counter(char *obj, long long counter) {
    long i = find(obj);
    if (i >= 0) {
        free(obj);
        table[i].counter = counter;
        return;
    }
    if (used == cap) {
        cap = cap ? cap * 2 : 16;
        table = realloc(table, cap * sizeof(entry));
    }
    table[used].obj = obj;
    table[used].counter = counter;
    used++;
}

static void reset(void) {
    while (used) drop_at(used - 1);
    positive = negative = 0;
}

static void respond(const char *returns) { printf("{\"returns\":%s,\"events\":[]}\n", returns); }

static void step(const char *op, const char *args) {
    char *obj = args ? get(args, "object") : NULL;
    if (strcmp(op, "\"insert\"") == 0 && obj) {
        set_counter(obj, ++positive);
        respond("null");
        return;
    }
    if (strcmp(op, "\"push_front\"") == 0 && obj) {
        set_counter(obj, --negative);
        respond("null");
        return;
    }
    if (strcmp(op, "\"remove\"") == 0 && obj) {
        long i = find(obj);
        if (i >= 0) drop_at((size_t)i);
        respond(i >= 0 ? "true" : "false");
        free(obj);
        return;
    }
    free(obj);
    if (strcmp(op, "\"evict\"") == 0) {
        if (!used) {
            respond("null");
            return;
        }
        size_t best = 0;
        for (size_t i = 1; i < used; i++) {
            int better = bug_evict_newest ? table[i].counter > table[best].counter
                                          : table[i].counter < table[best].counter;
            if (better) best = i;
        }
        printf("{\"returns\":%s,\"events\":[]}\n", table[best].obj);
        drop_at(best);
        return;
    }
    if (strcmp(op, "\"len\"") == 0) {
        printf("{\"returns\":%zu,\"events\":[]}\n", used);
        return;
    }
    printf("{\"error\":\"InvalidInput\",\"events\":[]}\n");
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--bug") == 0 && strcmp(argv[2], "evict_newest") == 0)
        bug_evict_newest = 1;
    char *line = NULL;
    size_t n = 0;
    while (getline(&line, &n, stdin) > 0) {
        char *type = get(line, "type");
        if (!type) {
            fprintf(stderr, "lru_counter: not a request: %s", line);
            return 1;
        }
        if (strcmp(type, "\"hello\"") == 0) {
            printf("{\"type\":\"hello\",\"protocol\":\"kvmodel-harness/1\",\"name\":\"lru_counter.c%s\"}\n",
                   bug_evict_newest ? " (bug: evict_newest)" : "");
        } else if (strcmp(type, "\"reset\"") == 0) {
            reset();
            printf("{\"ok\":true}\n");
        } else if (strcmp(type, "\"step\"") == 0) {
            char *op = get(line, "op"), *args = get(line, "args");
            step(op ? op : "", args);
            free(op);
            free(args);
        } else if (strcmp(type, "\"bye\"") == 0) {
            free(type);
            return 0;
        } else {
            fprintf(stderr, "lru_counter: unknown request type %s\n", type);
            return 1;
        }
        free(type);
        fflush(stdout);
    }
    return 0;
}
