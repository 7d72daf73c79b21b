/* SPDX-License-Identifier: MIT */
/* spulse: command-line entry point; dispatches to the subcommands. */

/*
 * `spulse CMD [options] FILE`. The table below is the whole command set;
 * each command parses its own options, prints results on stdout and
 * errors on stderr, and returns an exit status (see spulse.h). main()
 * owns two process-wide concerns: SIGPIPE is ignored so that
 * `spulse dump f | head` ends with EPIPE instead of a signal, and stdout
 * is flushed and checked once at the end (spulse_out_finish).
 */
#include <signal.h>
#include <string.h>

#include "spulse.h"

struct spulse_cmd {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
	void (*usage)(FILE *f);
};

static const struct spulse_cmd commands[] = {
	{ "check", "validate a spool and print its record counts",
	  spulse_cmd_check, spulse_check_usage },
	{ "dump", "print every record of a spool, readable or as JSON lines",
	  spulse_cmd_dump, spulse_dump_usage },
	{ "export", "write folded, SVG flame graph, speedscope, Firefox, pprof",
	  spulse_cmd_export, spulse_export_usage },
	{ "record", "sample a command or running processes into a spool",
	  spulse_cmd_record, spulse_record_usage },
	{ "report", "symbolize samples: top functions, stacks, folded, tree",
	  spulse_cmd_report, spulse_report_usage },
	{ "top", "live top functions of a process, a command or a spool",
	  spulse_cmd_top, spulse_top_usage },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void usage(FILE *f)
{
	size_t i;

	fputs("usage: spulse <command> [options] [FILE]\n"
	      "       spulse help [command]\n"
	      "       spulse --version\n"
	      "\n"
	      "Record CPU stacks into SPULSE3 spools (plain or zstd) and\n"
	      "inspect, report and export them.\n"
	      "\n"
	      "Commands:\n",
	      f);
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n", commands[i].name,
			commands[i].summary);
	fputs("  help     show the help of a command (spulse help record)\n",
	      f);
	fputs("\n"
	      "Exit status: 0 success (also a spool whose cut-off tail was\n"
	      "recovered: a warning goes to stderr), 1 corrupt or unreadable\n"
	      "file or a failed write, 2 usage error.\n",
	      f);
}

static const struct spulse_cmd *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static bool is_help(const char *arg)
{
	return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

/* `spulse help [CMD]`: help goes to stdout because it was asked for. */
static int run_help(int argc, char **argv)
{
	const struct spulse_cmd *cmd;

	if (argc < 1) {
		usage(stdout);
		return SPULSE_EXIT_OK;
	}
	if (argc > 1)
		return spulse_usage_error("help", "too many arguments",
					  argv[1]);
	cmd = find_command(argv[0]);
	if (!cmd)
		return spulse_usage_error("help", "unknown command", argv[0]);
	cmd->usage(stdout);
	return SPULSE_EXIT_OK;
}

static int run(int argc, char **argv)
{
	const struct spulse_cmd *cmd;

	if (argc < 2) {
		usage(stderr);
		return SPULSE_EXIT_USAGE;
	}
	if (is_help(argv[1])) {
		usage(stdout);
		return SPULSE_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("spulse %s\n", sp_version());
		return SPULSE_EXIT_OK;
	}
	if (strcmp(argv[1], "help") == 0)
		return run_help(argc - 2, argv + 2);
	cmd = find_command(argv[1]);
	if (!cmd)
		return spulse_usage_error(NULL, "unknown command", argv[1]);
	return cmd->run(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	return spulse_out_finish(run(argc, argv));
}
