"""agent.memory"""
