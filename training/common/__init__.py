"""training.common"""
