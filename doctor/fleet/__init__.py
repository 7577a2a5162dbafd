"""Fleet facts: qwen-doctor's collector run on every node through Ray tasks or a Spark barrier stage."""
