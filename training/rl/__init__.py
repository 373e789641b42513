"""training.rl"""
