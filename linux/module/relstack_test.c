// SPDX-License-Identifier: GPL-2.0
/*
 * Test module for the relative and reliable kernel stack events.
 *
 * Writing to /proc/relstack_test runs a known call chain that ends in the
 * relstack_test_hit tracepoint, after module init so that every frame is
 * in the module's core text:
 *
 *   relstack_test_outer -> relstack_test_middle -> relstack_test_leaf
 *
 *   "task"     runs it once in the writer's task context (context=0)
 *   "timer"    runs it once from a timer callback, in softirq (context=1)
 *   "bench N"  runs it N times in task context (context=2)
 *
 * Reading the file gives how many chains each context ran.
 */
#include <linux/module.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>
#include <linux/timer.h>
#include <linux/uaccess.h>

#define CREATE_TRACE_POINTS
#include "relstack_test_trace.h"

static unsigned long relstack_test_runs[3];
static struct timer_list relstack_test_timer;

/* Each link does work after its call, so the compiler keeps the frame. */
static noinline void relstack_test_leaf(int context)
{
	trace_relstack_test_hit(context, relstack_test_runs[context]);
	WRITE_ONCE(relstack_test_runs[context], relstack_test_runs[context] + 1);
}

static noinline void relstack_test_middle(int context)
{
	relstack_test_leaf(context);
	barrier();
}

static noinline void relstack_test_outer(int context)
{
	relstack_test_middle(context);
	barrier();
}

static void relstack_test_timer_fn(struct timer_list *t)
{
	relstack_test_outer(1);
}

static ssize_t relstack_test_write(struct file *file, const char __user *ubuf,
				   size_t len, loff_t *ppos)
{
	char buf[32];
	unsigned long n;

	if (len >= sizeof(buf))
		return -EINVAL;
	if (copy_from_user(buf, ubuf, len))
		return -EFAULT;
	buf[len] = '\0';

	if (sysfs_streq(buf, "task")) {
		relstack_test_outer(0);
	} else if (sysfs_streq(buf, "timer")) {
		mod_timer(&relstack_test_timer, jiffies + 1);
	} else if (!strncmp(buf, "bench ", 6) && !kstrtoul(buf + 6, 0, &n)) {
		while (n--)
			relstack_test_outer(2);
	} else {
		return -EINVAL;
	}
	return len;
}

static int relstack_test_show(struct seq_file *m, void *v)
{
	seq_printf(m, "task %lu timer %lu bench %lu\n",
		   READ_ONCE(relstack_test_runs[0]),
		   READ_ONCE(relstack_test_runs[1]),
		   READ_ONCE(relstack_test_runs[2]));
	return 0;
}

static int relstack_test_open(struct inode *inode, struct file *file)
{
	return single_open(file, relstack_test_show, NULL);
}

static const struct proc_ops relstack_test_ops = {
	.proc_open	= relstack_test_open,
	.proc_read	= seq_read,
	.proc_lseek	= seq_lseek,
	.proc_release	= single_release,
	.proc_write	= relstack_test_write,
};

static int __init relstack_test_init(void)
{
	timer_setup(&relstack_test_timer, relstack_test_timer_fn, 0);
	if (!proc_create("relstack_test", 0600, NULL, &relstack_test_ops))
		return -ENOMEM;
	return 0;
}

static void __exit relstack_test_exit(void)
{
	remove_proc_entry("relstack_test", NULL);
	del_timer_sync(&relstack_test_timer);
}

module_init(relstack_test_init);
module_exit(relstack_test_exit);
MODULE_DESCRIPTION("Known call chains for relative and reliable stack events");
MODULE_LICENSE("GPL");
